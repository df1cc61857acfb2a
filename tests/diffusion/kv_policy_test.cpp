// The rows each K/V policy (diffusion/kv_policy.h) forwards, worked out by hand from Fast-dLLM's
// generate_with_prefix_cache / generate_with_dual_cache and from the exact block reuse the
// block-causal mask allows.
#include "diffusion/kv_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace dllm::diffusion {
namespace {

struct Rows {
  int64_t first, n;
  bool kv, refresh;
  bool operator==(const Rows&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Rows& r) {
  return os << "{" << r.first << ", " << r.n << ", " << r.kv << ", " << r.refresh << "}";
}

Rows rows_of(KvPolicy& p, const std::vector<int32_t>& canvas, const ActiveBlock& b) {
  const forward::Segment s = p.segment(canvas, b);
  return {s.first, s.n_rows(), s.kv != nullptr, p.refreshed()};
}

const std::vector<int32_t> kCanvas(20, 1);  // prompt 4, blocks [4, 12) and [12, 20)
const ActiveBlock kBlock0{0, 4, 12}, kBlock1{1, 12, 20};

TEST(KvPolicy, NoneForwardsTheCanvasEveryStep) {
  KvNone p;
  EXPECT_EQ(rows_of(p, kCanvas, kBlock0), (Rows{0, 20, false, false}));
  p.accepted(kBlock0);
  EXPECT_EQ(rows_of(p, kCanvas, kBlock1), (Rows{0, 20, false, false}));
}

TEST(KvPolicy, FastDllmRefreshesAtEachBlockThenRunsTheWindow) {
  for (const bool dual : {false, true}) {
    for (const bool shift : {false, true}) {
      KvFastDllm p(dual, shift);
      const int64_t s = shift ? 1 : 0;
      EXPECT_EQ(rows_of(p, kCanvas, kBlock0), (Rows{0, 20, true, true}));
      p.accepted(kBlock0);
      EXPECT_EQ(rows_of(p, kCanvas, kBlock0), (Rows{4 - s, (dual ? 12 : 20) - 4 + s, true, false}));
      p.accepted(kBlock0);
      EXPECT_EQ(rows_of(p, kCanvas, kBlock1), (Rows{0, 20, true, true}));
      p.accepted(kBlock1);
      EXPECT_EQ(rows_of(p, kCanvas, kBlock1), (Rows{12 - s, 8 + s, true, false}));
    }
  }
}

TEST(KvPolicy, FastDllmRefreshesAgainWhenTheRefreshWasNotAccepted) {
  // A refresh whose step failed (not accepted) is run again: the state may hold a half-written pass.
  KvFastDllm p(true, false);
  EXPECT_TRUE(rows_of(p, kCanvas, kBlock0).refresh);
  EXPECT_TRUE(rows_of(p, kCanvas, kBlock0).refresh);
}

TEST(KvPolicy, ExactBlocksWriteEachRowOnceWithItsFinalTokens) {
  KvExactBlocks p(forward::MaskRule::block_causal(8));
  // Blocks of 8 from position 0 with a 4-token prompt: the first active block [0, 8) holds the prompt.
  const ActiveBlock b0{0, 0, 8}, b1{1, 8, 16}, b2{2, 16, 20};
  EXPECT_EQ(rows_of(p, kCanvas, b0), (Rows{0, 8, true, false}));
  p.accepted(b0);
  EXPECT_EQ(rows_of(p, kCanvas, b0), (Rows{0, 8, true, false}));
  p.accepted(b0);
  // The next block's first step recomputes block 0 with its final tokens; after it, rows < 8 are kept.
  EXPECT_EQ(rows_of(p, kCanvas, b1), (Rows{0, 16, true, false}));
  p.accepted(b1);
  EXPECT_EQ(p.kept(), 8);
  EXPECT_EQ(rows_of(p, kCanvas, b1), (Rows{8, 8, true, false}));
  p.accepted(b1);
  EXPECT_EQ(rows_of(p, kCanvas, b2), (Rows{8, 12, true, false}));
  p.accepted(b2);
  EXPECT_EQ(rows_of(p, kCanvas, b2), (Rows{16, 4, true, false}));
  EXPECT_EQ(p.segment(kCanvas, b2).mask, forward::MaskRule::block_causal(8));
  // Every canvas row ends up in the state: the device is told so on the first pass.
  KvExactBlocks q(forward::MaskRule::block_causal(8));
  EXPECT_EQ(q.segment(kCanvas, b0).kv->expected_rows(), static_cast<int64_t>(kCanvas.size()));
}

}  // namespace
}  // namespace dllm::diffusion
