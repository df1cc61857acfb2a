// Transfer schedules against tables worked out by hand from the reference code:
// LLaDA generate.py get_num_transfer_tokens, Dream generation_utils.py _sample (timesteps, counts).
#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"
#include "diffusion/sampler.h"

using namespace dllm::diffusion;

// get_num_transfer_tokens: base = masks // steps for every step, +1 for the first masks % steps.
TEST(LladaSchedule, TransferCountsHandWorked) {
  // 32 // 10 = 3 remainder 2: the first two steps get 4 (the example in landscape.md 1a).
  EXPECT_EQ(llada_transfer_counts(32, 10), (std::vector<int64_t>{4, 4, 3, 3, 3, 3, 3, 3, 3, 3}));
  EXPECT_EQ(llada_transfer_counts(32, 8), (std::vector<int64_t>(8, 4)));
  EXPECT_EQ(llada_transfer_counts(32, 32), (std::vector<int64_t>(32, 1)));
  // 7 // 3 = 2 remainder 1.
  EXPECT_EQ(llada_transfer_counts(7, 3), (std::vector<int64_t>{3, 2, 2}));
  // More steps than masks: 5 // 8 = 0 remainder 5 -> ones, then zeros.
  EXPECT_EQ(llada_transfer_counts(5, 8), (std::vector<int64_t>{1, 1, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(llada_transfer_counts(1, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(llada_transfer_counts(0, 3), (std::vector<int64_t>{0, 0, 0}));
}

// torch.linspace(1, 1e-3, 5): step = (0.001 - 1) / 4 = -0.24975; first half 1 + step * i, second
// half 0.001 - step * (4 - i): 1, 0.75025, 0.5005, 0.25075, 0.001 (f32).
TEST(DreamSchedule, TimestepsLinspace) {
  const auto t = dream_timesteps(4, 1e-3);
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0], 1.0f);
  EXPECT_FLOAT_EQ(t[1], 0.75025f);
  EXPECT_FLOAT_EQ(t[2], 0.5005f);
  EXPECT_FLOAT_EQ(t[3], 0.25075f);
  EXPECT_EQ(t[4], 0.001f);  // exact: the second half counts down from eps
  const auto t256 = dream_timesteps(256, 1e-3);
  EXPECT_EQ(t256.front(), 1.0f);
  EXPECT_EQ(t256.back(), 0.001f);
  for (size_t i = 1; i < t256.size(); ++i) EXPECT_LT(t256[i], t256[i - 1]);
}

namespace {
// Runs the count formula with masks decreasing by the revealed count, as _sample's loop does.
std::vector<int64_t> run_counts(int64_t n, int64_t steps) {
  const auto ts = dream_timesteps(steps, 1e-3);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < steps; ++i) {
    const int64_t k = dream_transfer_count(n, i, ts);
    out.push_back(k);
    n -= k;
  }
  return out;
}
}  // namespace

// number_transfer_tokens = int(masks * (1 - s/t)), everything left on the last step.
TEST(DreamSchedule, RevealCountsHandWorked) {
  // 8 masks, 4 steps, t = 1, .75025, .5005, .25075, .001:
  //   step 0: 8 * (1 - .75025)        = 8 * .24975 = 1.998 -> 1, left 7
  //   step 1: 7 * (1 - .5005/.75025)  = 7 * .33289 = 2.330 -> 2, left 5
  //   step 2: 5 * (1 - .25075/.5005) = 5 * .49900 = 2.495 -> 2, left 3
  //   step 3: last step, all 3.
  EXPECT_EQ(run_counts(8, 4), (std::vector<int64_t>{1, 2, 2, 3}));
  // 10 masks, 3 steps, t = 1, .667, .334, .001: 10 * .333 = 3.33 -> 3; 7 * (1 - .334/.667) = 3.49 -> 3; 4.
  EXPECT_EQ(run_counts(10, 3), (std::vector<int64_t>{3, 3, 4}));
  // 3 masks, 2 steps, t = 1, .5005, .001: 3 * .4995 = 1.4985 -> 1; then 2.
  EXPECT_EQ(run_counts(3, 2), (std::vector<int64_t>{1, 2}));
  // 64 masks, 4 steps: 64 * .24975 = 15.98 -> 15; 49 * .33289 = 16.31 -> 16; 33 * .499 = 16.47 -> 16; 17.
  EXPECT_EQ(run_counts(64, 4), (std::vector<int64_t>{15, 16, 16, 17}));
}

// steps == masks: the floor and eps make step 0 reveal 0 (256 * .999/256 = .999), then 1 per step,
// and the deficit lands on the last step (landscape.md 1b).
TEST(DreamSchedule, StepsEqualTokens) {
  const auto c = run_counts(256, 256);
  EXPECT_EQ(c.front(), 0);
  EXPECT_EQ(c.back(), 2);
  for (size_t i = 1; i + 1 < c.size(); ++i) EXPECT_EQ(c[i], 1) << "step " << i;
  const auto c64 = run_counts(256, 64);  // 256 * .999/64 = 3.996 -> 3, then 4s, 5 on the last step
  EXPECT_EQ(c64.front(), 3);
  EXPECT_EQ(c64.back(), 5);
  for (size_t i = 1; i + 1 < c64.size(); ++i) EXPECT_EQ(c64[i], 4) << "step " << i;
}

TEST(DreamSchedule, OriginProbability) {
  const auto ts = dream_timesteps(4, 1e-3);
  EXPECT_FLOAT_EQ(dream_transfer_probability(0, ts), 0.24975f);
  EXPECT_FLOAT_EQ(dream_transfer_probability(1, ts), 1.0f - 0.5005f / 0.75025f);
  EXPECT_EQ(dream_transfer_probability(3, ts), 1.0f);  // last step reveals everything
}

TEST(SamplerNames, ParseAndReject) {
  EXPECT_EQ(parse_remasking("random"), Remasking::kRandom);
  EXPECT_EQ(parse_dream_alg("topk_margin"), DreamAlg::kTopkMargin);
  try {
    parse_dream_alg("confidence");
    FAIL();
  } catch (const dllm::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("origin, maskgit_plus, topk_margin, entropy"), std::string::npos);
  }
  EXPECT_THROW(parse_remasking("low"), dllm::UsageError);
  for (auto a : {DreamAlg::kOrigin, DreamAlg::kMaskgitPlus, DreamAlg::kTopkMargin, DreamAlg::kEntropy})
    EXPECT_EQ(parse_dream_alg(dream_alg_name(a)), a);
}
