// The K/V policies of diffusion/kv_policy.h over the CPU forward pass on the tiny reference models:
// exact reuse under a block-causal mask (the policy block diffusion needs) gives, at every step, the
// logits of recomputing the whole prefix under the same mask bit for bit (the reference loop of HF
// modeling_llada2_moe.py generate() recomputes x[:(k+1)B] each step), including the block that
// holds the prompt's last tokens and the first generated ones; the state holds only the rows the
// sequence reached.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cpu/forward.h"
#include "diffusion/kv_policy.h"
#include "engine_test_util.h"
#include "forward/pass.h"

namespace dllm {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(KvReuse, ExactBlocksEqualRecomputingThePrefix) {
  if (const std::string why = test::missing_reference(); !why.empty()) GTEST_SKIP() << why;
  for (const test::TinyModel* m : {&test::TinyModel::llada(), &test::TinyModel::dream()}) {
    cpu::ForwardOptions opt;
    opt.max_tokens = 64;
    opt.n_threads = 2;
    cpu::CpuForward fwd(m->model(), opt);
    const int64_t B = 8, prompt = 13, canvas_len = 40;  // blocks [8, 16) (prompt 8..12 + 3 new), ... [32, 40)
    const forward::MaskRule rule = forward::MaskRule::block_causal(B);
    std::mt19937 g(5);
    std::uniform_int_distribution<int32_t> tok(0, 1000);
    std::vector<int32_t> canvas(canvas_len, 7);  // 7 stands for the mask id
    for (int64_t i = 0; i < prompt; ++i) canvas[i] = tok(g);
    diffusion::KvExactBlocks exact(rule);
    diffusion::KvNone recompute(rule);
    for (int64_t b = prompt / B; b * B < canvas_len; ++b) {
      const diffusion::ActiveBlock block{b, b * B, std::min(canvas_len, (b + 1) * B)};
      for (int step = 0; step < 3; ++step) {
        std::vector<int32_t> rows;
        for (int64_t p = std::max(block.begin, prompt); p < block.end; ++p)
          rows.push_back(static_cast<int32_t>(p));
        std::vector<float> got(rows.size() * fwd.n_vocab()), want(got.size());
        forward::Segment s = exact.segment(canvas, block);
        s.logit_rows = rows;
        s.logits = got.data();
        fwd.forward({&s, 1});
        forward::Segment r = recompute.segment(std::span<const int32_t>(canvas).first(block.end), block);
        r.logit_rows = rows;
        r.logits = want.data();
        fwd.forward({&r, 1});
        EXPECT_TRUE(same_bits(got, want)) << "block " << b << " step " << step;
        // The run's first pass computes the prompt too; a block's first pass also recomputes the block
        // before it (its tokens are final now); the later steps forward the block alone.
        const bool first_of_run = b == prompt / B && step == 0;
        EXPECT_EQ(s.first, first_of_run ? 0
                           : step == 0  ? block.begin - B
                                        : block.begin)
            << "block " << b << " step " << step;
        exact.accepted(block);
        // Commit two positions of the block (what a step of the loop does).
        const int64_t from = std::max(block.begin, prompt) + 2 * step;
        for (int64_t p = from; p < std::min(from + 2, block.end); ++p) canvas[p] = tok(g);
      }
    }
    // The state holds the rows up to the last block's end, not max_tokens.
    EXPECT_EQ(exact.kept(), canvas_len - B);
  }
}

}  // namespace
}  // namespace dllm
