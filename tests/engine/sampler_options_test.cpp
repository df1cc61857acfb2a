// engine::sampler_params: the per-architecture defaults of README "Defaults", worked out by hand,
// and the warning for a setting of the other architecture in both namings (flags for `run`, JSON
// fields for `serve`).
#include "engine/sampler_options.h"

#include <gtest/gtest.h>

#include "engine_test_util.h"

namespace dllm {
namespace {

using engine::SamplerOptions;
using engine::SettingNames;
using test::TinyModel;

diffusion::SamplerParams params_of(const TinyModel& m, const SamplerOptions& o, std::vector<std::string>& w,
                                   SettingNames names = SettingNames::kFlags) {
  return engine::sampler_params(o, m.model().config(), m.tokenizer(), m.n_vocab(), w, names);
}

TEST(SamplerOptions, LladaDefaults) {
  const TinyModel& m = TinyModel::llada();
  std::vector<std::string> w;
  SamplerOptions o;
  o.max_tokens = 64;
  diffusion::SamplerParams p = params_of(m, o, w);
  EXPECT_EQ(p.schedule, diffusion::Schedule::kBlocks);
  EXPECT_EQ(p.steps, 64);
  EXPECT_EQ(p.block_length, 32);
  EXPECT_EQ(p.remasking, diffusion::Remasking::kLowConfidence);
  EXPECT_EQ(p.mask_id, m.tokenizer().mask_id());
  EXPECT_FALSE(p.shift_logits);
  EXPECT_TRUE(w.empty());
  o.max_tokens = 40;  // 32 does not divide 40: one block
  EXPECT_EQ(params_of(m, o, w).block_length, 40);
  o.block_length = 8;
  EXPECT_EQ(params_of(m, o, w).block_length, 8);
}

TEST(SamplerOptions, DreamDefaults) {
  const TinyModel& m = TinyModel::dream();
  std::vector<std::string> w;
  SamplerOptions o;
  o.max_tokens = 48;
  o.steps = 24;
  diffusion::SamplerParams p = params_of(m, o, w);
  EXPECT_EQ(p.schedule, diffusion::Schedule::kTimesteps);
  EXPECT_EQ(p.steps, 24);
  EXPECT_EQ(p.alg, diffusion::DreamAlg::kEntropy);
  EXPECT_EQ(p.block_length, 0);
  EXPECT_EQ(p.top_p, 1.0);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_TRUE(p.shift_logits);
  EXPECT_TRUE(w.empty());
}

TEST(SamplerOptions, OtherArchitecturesSettingsWarnInEitherNaming) {
  std::vector<std::string> w;
  SamplerOptions o;
  o.alg_temp = 0.5;
  params_of(TinyModel::llada(), o, w);
  params_of(TinyModel::llada(), o, w, SettingNames::kFields);
  SamplerOptions d;
  d.block_length = 16;
  params_of(TinyModel::dream(), d, w, SettingNames::kFields);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "--alg-temp applies to Dream models; ignored for llada");
  EXPECT_EQ(w[1], "alg_temp applies to Dream models; ignored for llada");
  EXPECT_EQ(w[2], "block_length applies to LLaDA models (or Dream with threshold); ignored");
}

TEST(SamplerOptions, EntropyBoundSettingsWarnElsewhere) {
  std::vector<std::string> w;
  SamplerOptions o;
  o.eb_t_min = 0.5;
  o.max_post_edit_steps = 3;  // without edit_threshold
  params_of(TinyModel::llada(), o, w, SettingNames::kFields);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "max_post_edit_steps applies with edit_threshold (LLaDA2.1 token editing); ignored");
  EXPECT_EQ(w[1], "eb_t_min applies to the entropy-bound sampler (diffusion-gemma); ignored for llada");
}

// The canvas-fit messages worked by hand: a context of 4096, a 23-token prompt.
TEST(CanvasFits, WholeCanvasesAreRoundedAndSuggested) {
  auto message = [](int64_t n, int64_t m, int64_t granule) {
    try {
      engine::check_canvas_fits(n, m, 4096, "the context", "max_tokens", granule);
    } catch (const engine::CanvasTooLong& e) {
      return std::string(e.prompt_alone() ? "alone: " : "") + e.what();
    }
    return std::string("fits");
  };
  EXPECT_EQ(message(23, 4073, 1), "fits");
  EXPECT_EQ(
      message(23, 4074, 1),
      "the canvas is 4097 tokens (prompt 23 + max_tokens 4074), longer than the context of 4096 tokens: "
      "use max_tokens 4073 or less, or shorten the prompt");
  // Canvases of 32: 4073 takes 128 of them (4096), 4064 = 127 x 32 is the most that fits.
  EXPECT_EQ(message(23, 4064, 32), "fits");
  EXPECT_EQ(
      message(23, 4073, 32),
      "the canvas is 4119 tokens (prompt 23 + max_tokens 4073, rounded up to whole canvases of 32 tokens: "
      "4096), longer than the context of 4096 tokens: use max_tokens 4064 or less, or shorten the prompt");
  // 4070 + 32 > 4096: no whole canvas fits after this prompt.
  EXPECT_EQ(message(4070, 1, 32).rfind("alone: the prompt is 4070 tokens", 0), 0u);
}

TEST(SamplerOptions, UnknownNamesAreUsageErrors) {
  std::vector<std::string> w;
  SamplerOptions o;
  o.cache = "triple";
  EXPECT_THROW(params_of(TinyModel::llada(), o, w), UsageError);
}

}  // namespace
}  // namespace dllm
