// The mask rules of forward/mask.h against key sets worked out by hand from their definitions
// (block-causal: j / B <= i / B, blocks from absolute position 0; causal prompt; a sliding window of
// W keys keeps the W - 1 keys before the row's group), and each rule's ranges against the predicate
// it stands for, key by key.
#include "forward/mask.h"

#include <gtest/gtest.h>

#include <vector>

namespace dllm::forward {
namespace {

std::vector<std::pair<int, int>> ranges(const MaskRule& rule, int64_t n, int64_t window = 0) {
  std::vector<std::pair<int, int>> out;
  for (int64_t i = 0; i < n; ++i) {
    const KeyRange r = key_range(rule, i, n, window);
    out.emplace_back(r.begin, r.end);
  }
  return out;
}

using R = std::vector<std::pair<int, int>>;

TEST(MaskRule, FullSeesEveryKey) {
  EXPECT_EQ(ranges(MaskRule::full(), 3), (R{{0, 3}, {0, 3}, {0, 3}}));
  // A window changes nothing under the full rule: the group is every key.
  EXPECT_EQ(ranges(MaskRule::full(), 3, 2), (R{{0, 3}, {0, 3}, {0, 3}}));
}

TEST(MaskRule, CausalSeesItselfAndBefore) {
  EXPECT_EQ(ranges(MaskRule::causal(), 4), (R{{0, 1}, {0, 2}, {0, 3}, {0, 4}}));
  EXPECT_EQ(MaskRule::causal(), MaskRule::block_causal(1));
}

TEST(MaskRule, BlockCausalCountsBlocksFromPositionZero) {
  // B = 4 over 10 keys: blocks [0,4) [4,8) [8,10).
  EXPECT_EQ(ranges(MaskRule::block_causal(4), 10),
            (R{{0, 4}, {0, 4}, {0, 4}, {0, 4}, {0, 8}, {0, 8}, {0, 8}, {0, 8}, {0, 10}, {0, 10}}));
}

TEST(MaskRule, PromptTailSharesABlockWithTheFirstGeneratedTokens) {
  // A prompt of 6 tokens with B = 4: prompt positions 4 and 5 are in the block [4, 8) with the first
  // two generated positions 6 and 7, and see them (the reference's x[:(k+1)B] recompute does too);
  // prompt positions 0..3 do not see position 4.
  const MaskRule rule = MaskRule::block_causal(4);
  EXPECT_EQ(key_range(rule, 3, 12).end, 4);
  EXPECT_EQ(key_range(rule, 4, 12).end, 8);
  EXPECT_EQ(key_range(rule, 5, 12).end, 8);  // the prompt's last token sees generated 6 and 7
  EXPECT_EQ(key_range(rule, 6, 12).end, 8);
  EXPECT_EQ(key_range(rule, 8, 12).end, 12);
  // Keys that do not exist yet (the block runs past the keys held) are not seen.
  EXPECT_EQ(key_range(rule, 5, 7).end, 7);
}

TEST(MaskRule, CausalPromptThenBidirectionalCanvas) {
  // Prompt of 3, canvas of 3: the prompt is causal, every canvas row sees the prompt and the canvas.
  EXPECT_EQ(ranges(MaskRule::causal_prompt(3), 6), (R{{0, 1}, {0, 2}, {0, 3}, {0, 6}, {0, 6}, {0, 6}}));
}

TEST(MaskRule, SlidingWindowKeepsTheKeysBeforeTheGroup) {
  // Causal with W = 3: row i sees i-2 .. i.
  EXPECT_EQ(ranges(MaskRule::causal(), 5, 3), (R{{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 5}}));
  // DiffusionGemma: prompt of 5 causal, canvas of 3; W = 3 on a sliding layer: prompt rows see their
  // last 3 keys, canvas rows the last W - 1 = 2 prompt tokens (3, 4) and the canvas.
  EXPECT_EQ(ranges(MaskRule::causal_prompt(5), 8, 3),
            (R{{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 5}, {3, 8}, {3, 8}, {3, 8}}));
  // Block-causal B = 4 with W = 2: one key before the block.
  EXPECT_EQ(ranges(MaskRule::block_causal(4), 8, 2),
            (R{{0, 4}, {0, 4}, {0, 4}, {0, 4}, {3, 8}, {3, 8}, {3, 8}, {3, 8}}));
}

TEST(MaskRule, RangesAreThePredicateKeyByKey) {
  // Each rule's predicate written out (j visible from i), checked against the ranges on every pair.
  for (int64_t n : {1, 7, 33}) {
    for (int64_t b : {1, 2, 5, 8}) {
      for (int64_t i = 0; i < n; ++i) {
        const KeyRange r = key_range(MaskRule::block_causal(b), i, n);
        for (int64_t j = 0; j < n; ++j) EXPECT_EQ(j >= r.begin && j < r.end, j / b <= i / b) << n << " " << b;
      }
    }
    for (int64_t p : {0, 3, 40}) {
      for (int64_t w : {0, 1, 4}) {
        for (int64_t i = 0; i < n; ++i) {
          const KeyRange r = key_range(MaskRule::causal_prompt(p), i, n, w);
          const int64_t from = i < p ? i : p;  // the group's first position
          for (int64_t j = 0; j < n; ++j) {
            const bool seen = (i < p ? j <= i : true) && (w == 0 || j > from - w);
            EXPECT_EQ(j >= r.begin && j < r.end, seen) << "n " << n << " p " << p << " w " << w << " i " << i;
          }
        }
      }
    }
  }
}

TEST(MaskRule, Describe) {
  EXPECT_EQ(describe(MaskRule::full()), "full");
  EXPECT_EQ(describe(MaskRule::causal()), "causal");
  EXPECT_EQ(describe(MaskRule::block_causal(32)), "block-causal 32");
  EXPECT_EQ(describe(MaskRule::causal_prompt(17)), "causal prompt 17");
}

}  // namespace
}  // namespace dllm::forward
