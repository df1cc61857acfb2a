// --trace: one JSON line per step (issue 5's check: LLaDA max_tokens 64, block 32, steps 16 gives 4
// commits per step in 2 blocks of 8 steps).
#include "diffusion/trace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "scripted_source.h"
#include "test_util.h"
#include "traced_run.h"

using namespace dllm::diffusion;

TEST(Trace, LladaSixtyFourTokensSixteenSteps) {
  constexpr int64_t kVocab = 32;
  constexpr int32_t kMask = 31;
  dllm::test::ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    dllm::test::peaked(out, kVocab, row % 30, 0.2 + 0.7 * ((row * 37) % 64) / 64.0, kMask);
  });
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  SamplerParams p;
  p.schedule = Schedule::kBlocks;
  p.max_tokens = 64;
  p.block_length = 32;
  p.steps = 16;
  p.mask_id = kMask;
  const std::vector<nlohmann::json> steps = dllm::test::traced_run(src, prompt, p);
  ASSERT_EQ(steps.size(), 16u);
  int64_t masks = 64;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    EXPECT_EQ(s["step"].get<int64_t>(), static_cast<int64_t>(i));
    const int64_t block = static_cast<int64_t>(i / 8);
    EXPECT_EQ(s["block"].get<int64_t>(), block);
    ASSERT_EQ(s["positions"].size(), 4u) << "step " << i;
    ASSERT_EQ(s["tokens"].size(), 4u);
    ASSERT_EQ(s["confidences"].size(), 4u);
    for (size_t j = 0; j < 4; ++j) {
      const int64_t pos = s["positions"][j].get<int64_t>();
      EXPECT_GE(pos, 5 + 32 * block);
      EXPECT_LT(pos, 5 + 32 * (block + 1));
      EXPECT_EQ(s["tokens"][j].get<int64_t>(), pos % 30);
      EXPECT_NEAR(s["confidences"][j].get<double>(), 0.2 + 0.7 * ((pos * 37) % 64) / 64.0, 1e-6);
    }
    masks -= 4;
    EXPECT_EQ(s["masks_left"].get<int64_t>(), masks);
    EXPECT_TRUE(s["forward_ms"].is_number());
    EXPECT_EQ(s["cache_refresh"], "none");  // no --cache: every step a full forward, nothing stored
  }
}

TEST(Trace, FormatAndNonFinite) {
  const std::vector<int32_t> pos = {7, 9}, tok = {100, 200}, canvas = {};
  const std::vector<float> conf = {0.5f, INFINITY};
  StepInfo s;
  s.step = 3;
  s.block = 1;
  s.positions = pos;
  s.tokens = tok;
  s.confidences = conf;
  s.masks_left = 12;
  s.forward_ms = 1.25;
  s.sample_ms = 0.5;
  EXPECT_EQ(TraceWriter::format(s),
            "{\"step\":3,\"block\":1,\"positions\":[7,9],\"tokens\":[100,200],\"confidences\":[0.5,null],"
            "\"masks_left\":12,\"forward_ms\":1.250,\"sample_ms\":0.500,\"cache_refresh\":\"none\"}");
  s.cache = CacheMode::kDual;
  s.cache_refresh = true;
  EXPECT_NE(TraceWriter::format(s).find(",\"cache_refresh\":\"full\"}"), std::string::npos);
  s.cache_refresh = false;
  EXPECT_NE(TraceWriter::format(s).find(",\"cache_refresh\":\"window\"}"), std::string::npos);
}

TEST(Trace, UnwritablePathIsAnError) {
  EXPECT_THROW(TraceWriter("/nonexistent-dir/trace.jsonl"), dllm::Error);
}
