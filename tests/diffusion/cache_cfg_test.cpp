// Classifier-free guidance and the Fast-dLLM cache schedule in the sampler, on scripted logits:
//  - CFG (LLaDA generate.py l.79-87): the second canvas has every prompt position masked and the
//    rest unchanged; the step ranks by softmax(un + (s + 1)(cond - un)), worked out here in f64;
//  - cache (NVlabs/Fast-dLLM llada/generate.py generate_with_prefix_cache / _dual_cache): the first
//    forward of each block is a refresh over the whole canvas, the others run the window
//    [block start, canvas end) (prefix) or [block start, block end) (dual); with the Dream logit
//    shift the window starts one position earlier. Tables worked out by hand below.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "diffusion/sampler.h"
#include "diffusion/trace.h"
#include "scripted_source.h"
#include "test_util.h"
#include "traced_run.h"

using namespace dllm::diffusion;
using dllm::test::peaked;
using dllm::test::ScriptedSource;

namespace {

constexpr int32_t kMask = 15;
constexpr int64_t kVocab = 16;
const std::vector<int32_t> kPrompt = {1, 2, 3};

SamplerParams llada(int64_t max_tokens, int64_t steps, int64_t block) {
  SamplerParams p;
  p.schedule = Schedule::kBlocks;
  p.max_tokens = max_tokens;
  p.steps = steps;
  p.block_length = block;
  p.mask_id = kMask;
  p.early_stop = false;
  return p;
}

/// Records every segment with a K/V state: (window_begin, window_end, refresh, rows). A refresh is a
/// segment into a cleared state (the whole canvas); a window step a segment of [wb, we) against it.
class CacheRecorder : public ScriptedSource {
 public:
  using ScriptedSource::ScriptedSource;
  void on_kv_segment(const dllm::forward::Segment& s) override {
    const bool refresh = s.kv->rows() == 0;
    const int64_t wb = s.first, we = s.first + s.n_rows();
    if (refresh) {
      EXPECT_EQ(wb, 0);
    }
    calls.emplace_back(wb, we, refresh, std::vector<int32_t>(s.logit_rows.begin(), s.logit_rows.end()));
    for (int32_t r : s.logit_rows) {
      EXPECT_GE(r, wb);
      EXPECT_LT(r, we);
    }
  }
  std::vector<std::tuple<int64_t, int64_t, bool, std::vector<int32_t>>> calls;
};

ScriptedSource::RowFn position_tokens() {
  // Token = row % 10 with a confidence falling along the canvas: lower positions commit first.
  return [](std::span<const int32_t>, int32_t row, float* out) {
    peaked(out, kVocab, row % 10, 0.9 - 0.01 * row, kMask);
  };
}

}  // namespace

// LLaDA, prompt 3, max_tokens 8, block 4, steps 4: blocks [3, 7) and [7, 11), 2 steps each committing
// 2 (get_num_transfer_tokens(4, 2) = [2, 2]). Prefix: refresh, then window [3, 11); refresh, then
// window [7, 11). Dual: windows [3, 7) and [7, 11). Rows are the masked positions of the block.
TEST(Cache, LladaRefreshAtEachBlockStartThenWindow) {
  for (const CacheMode mode : {CacheMode::kPrefix, CacheMode::kDual}) {
    CacheRecorder src(kVocab, position_tokens());
    auto p = llada(8, 4, 4);
    p.cache = mode;
    const auto r = generate(src, kPrompt, p);
    const int64_t end0 = mode == CacheMode::kDual ? 7 : 11;
    using Call = std::tuple<int64_t, int64_t, bool, std::vector<int32_t>>;
    const std::vector<Call> expected = {Call{0, 11, true, {3, 4, 5, 6}}, Call{3, end0, false, {5, 6}},
                                        Call{0, 11, true, {7, 8, 9, 10}}, Call{7, 11, false, {9, 10}}};
    EXPECT_EQ(src.calls, expected) << cache_mode_name(mode);
    EXPECT_EQ(r.answer, (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 0}));
  }
}

namespace {

/// Runs generate() with a TraceWriter and returns the trace's "cache_refresh" values, one per line.
std::vector<std::string> traced_cache_refresh(dllm::test::ScriptedSource& src, const SamplerParams& p,
                                              std::span<const int32_t> prompt) {
  std::vector<std::string> out;
  for (const nlohmann::json& line : dllm::test::traced_run(src, prompt, p))
    out.push_back(line["cache_refresh"].get<std::string>());
  return out;
}

/// The expected trace: "full" at the given steps (block starts), "window" at every other step.
std::vector<std::string> full_at(size_t n_steps, const std::vector<size_t>& full) {
  std::vector<std::string> v(n_steps, "window");
  for (size_t i : full) v[i] = "full";
  return v;
}

}  // namespace

// --trace's cache_refresh, LLaDA, prompt 5, max_tokens 64, block 32, steps 16: 2 blocks of 8 steps.
// Fast-dLLM (generate_with_prefix_cache / _dual_cache) runs, per block, one full forward with
// use_cache=True (it stores past_key_values and commits that step's tokens), then `while` the block
// has masks a forward of x[:, block_start:] (prefix) or x[:, block_start:block_end] (dual) against
// the stored K/V: here 1 + 7 per block, so "full" at steps 0 and 8 and "window" at the other 14.
// Windows: prefix [5, 69) in both blocks' window steps, starting at the block: [5, 69) then [37, 69);
// dual [5, 37) then [37, 69). Without a cache every line says "none".
TEST(Cache, TraceMarksRefreshAtBlockStartsAndWindowSteps) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  for (const CacheMode mode : {CacheMode::kPrefix, CacheMode::kDual, CacheMode::kNone}) {
    CacheRecorder src(kVocab, position_tokens());
    auto p = llada(64, 16, 32);
    p.cache = mode;
    const auto trace = traced_cache_refresh(src, p, prompt);
    if (mode == CacheMode::kNone) {
      EXPECT_EQ(trace, std::vector<std::string>(16, "none"));
      EXPECT_TRUE(src.calls.empty());  // no cache: no segment carries a K/V state
      continue;
    }
    EXPECT_EQ(trace, full_at(16, {0, 8})) << cache_mode_name(mode);
    ASSERT_EQ(src.calls.size(), 16u);
    for (size_t i = 0; i < 16; ++i) {
      const auto& [wb, we, refresh, rows] = src.calls[i];
      EXPECT_EQ(refresh, i == 0 || i == 8) << "step " << i;
      if (refresh) continue;
      const int64_t block_begin = i < 8 ? 5 : 37;
      EXPECT_EQ(wb, block_begin) << "step " << i;
      EXPECT_EQ(we, mode == CacheMode::kDual ? block_begin + 32 : 69) << "step " << i;
    }
  }
}

// The same with threshold decoding (block 32, several steps per block, a data-dependent count).
// Confidence 0.95 at rows divisible by 4, else 0.5 - 0.001 * row. Block 0 = positions [5, 37): its
// first step commits the 8 positions 8, 12, ..., 36 (>= 0.9), then the other 24 one per step (each
// below 0.9, the most confident alone): 25 steps. Block 1 = [37, 69): 40, 44, ..., 68 (8) then 24
// singles: 25 steps. So "full" at steps 0 and 25 (each block's first step), "window" at the other 48.
TEST(Cache, TraceWithThresholdRefreshesOncePerBlock) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  for (const CacheMode mode : {CacheMode::kPrefix, CacheMode::kDual}) {
    CacheRecorder src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
      peaked(out, kVocab, row % 10, row % 4 == 0 ? 0.95 : 0.5 - 0.001 * row, kMask);
    });
    auto p = llada(64, 64, 32);
    p.threshold = 0.9;
    p.cache = mode;
    const auto trace = traced_cache_refresh(src, p, prompt);
    EXPECT_EQ(trace, full_at(50, {0, 25})) << cache_mode_name(mode);
    ASSERT_EQ(src.calls.size(), 50u);
    EXPECT_EQ(std::get<3>(src.calls[0]).size(), 32u);   // refresh: every masked position of block 0
    EXPECT_EQ(std::get<3>(src.calls[1]).size(), 24u);   // after the 8 above 0.9
    EXPECT_EQ(std::get<3>(src.calls[25]).size(), 32u);  // block 1's refresh
    EXPECT_EQ(std::get<0>(src.calls[26]), 37);
    EXPECT_EQ(std::get<1>(src.calls[26]), 69);  // dual: block end 69 = canvas end for the last block
    EXPECT_EQ(std::get<1>(src.calls[1]), mode == CacheMode::kDual ? 37 : 69);
  }
}

// Threshold 0.9 with confidences .9 - .01 * row: only the first masked position passes... none does
// (.87 at row 3), so one commit per step: 4 steps per block, refresh at the first of each.
TEST(Cache, ThresholdStepsRefreshOncePerBlock) {
  CacheRecorder src(kVocab, position_tokens());
  auto p = llada(8, 8, 4);
  p.threshold = 0.9;
  p.cache = CacheMode::kDual;
  std::vector<bool> refresh;
  SamplerCallbacks cb;
  cb.on_step = [&](const StepInfo& s) { refresh.push_back(s.cache_refresh); };
  generate(src, kPrompt, p, cb);
  EXPECT_EQ(refresh, (std::vector<bool>{true, false, false, false, true, false, false, false}));
  ASSERT_EQ(src.calls.size(), 8u);
  EXPECT_EQ(std::get<0>(src.calls[1]), 3);
  EXPECT_EQ(std::get<1>(src.calls[1]), 7);
  EXPECT_EQ(std::get<3>(src.calls[3]), (std::vector<int32_t>{6}));
}

// Dream with the logit shift: position i reads row i-1, so the window of block [3, 7) is [2, 7)
// (dual) or [2, 11) (prefix), and the block's first position reads row 2 from the window.
TEST(Cache, DreamShiftWindowStartsOneEarlier) {
  for (const CacheMode mode : {CacheMode::kPrefix, CacheMode::kDual}) {
    CacheRecorder src(kVocab, position_tokens());
    SamplerParams p;
    p.schedule = Schedule::kTimesteps;
    p.max_tokens = 8;
    p.steps = 8;
    p.block_length = 4;
    p.threshold = 0.9;
    p.shift_logits = true;
    p.mask_id = kMask;
    p.early_stop = false;
    p.cache = mode;
    generate(src, kPrompt, p);
    ASSERT_EQ(src.calls.size(), 8u);
    EXPECT_TRUE(std::get<2>(src.calls[0]));
    EXPECT_EQ(std::get<3>(src.calls[0]), (std::vector<int32_t>{2, 3, 4, 5}));
    EXPECT_FALSE(std::get<2>(src.calls[1]));
    EXPECT_EQ(std::get<0>(src.calls[1]), 2);
    EXPECT_EQ(std::get<1>(src.calls[1]), mode == CacheMode::kDual ? 7 : 11);
    EXPECT_EQ(std::get<3>(src.calls[1]), (std::vector<int32_t>{3, 4, 5}));
    EXPECT_TRUE(std::get<2>(src.calls[4]));
    EXPECT_EQ(std::get<0>(src.calls[5]), 6);
  }
}

// Dream without threshold: one block (the whole answer): one refresh, then windows from the prompt end.
TEST(Cache, DreamTimestepScheduleIsOneBlock) {
  CacheRecorder src(kVocab, position_tokens());
  SamplerParams p;
  p.schedule = Schedule::kTimesteps;
  p.alg = DreamAlg::kEntropy;
  p.max_tokens = 4;
  p.steps = 4;
  p.mask_id = kMask;
  p.early_stop = false;
  p.cache = CacheMode::kPrefix;
  generate(src, kPrompt, p);
  ASSERT_GE(src.calls.size(), 2u);  // steps that reveal nothing (int(...) = 0) run no forward
  EXPECT_TRUE(std::get<2>(src.calls[0]));
  for (size_t i = 1; i < src.calls.size(); ++i) {
    EXPECT_FALSE(std::get<2>(src.calls[i]));
    EXPECT_EQ(std::get<0>(src.calls[i]), 3);
    EXPECT_EQ(std::get<1>(src.calls[i]), 7);
  }
}

TEST(Cache, ParseNames) {
  EXPECT_EQ(parse_cache_mode("none"), CacheMode::kNone);
  EXPECT_EQ(parse_cache_mode("prefix"), CacheMode::kPrefix);
  EXPECT_EQ(parse_cache_mode("dual"), CacheMode::kDual);
  EXPECT_THROW(parse_cache_mode("full"), dllm::UsageError);
  EXPECT_STREQ(cache_mode_name(CacheMode::kDual), "dual");
}

// cond logits: token 1 at 2.0, token 2 at 1.9, the rest 0, mask -inf. un logits (prompt masked):
// token 1 at 2.0, the rest 0. Combined = un + (s + 1)(cond - un): token 1 stays 2.0, token 2 is
// 1.9 (s + 1). s = 0: cfg off, token 1 wins (2.0 > 1.9). s = 1: token 2 at 3.8 wins, with
// confidence e^3.8 / (e^3.8 + e^2 + 13 e^0) (16 ids minus the mask: 13 at logit 0).
TEST(Cfg, SecondCanvasMasksThePromptAndLogitsCombine) {
  std::vector<std::vector<int32_t>> seen;
  ScriptedSource src(kVocab, [&](std::span<const int32_t> canvas, int32_t, float* out) {
    const bool uncond = canvas[0] == kMask;
    for (int64_t i = 0; i < kVocab; ++i) out[i] = 0.0f;
    out[kMask] = -INFINITY;
    out[1] = 2.0f;
    out[2] = uncond ? 0.0f : 1.9f;
  });
  for (const double s : {0.0, 1.0}) {
    src.calls_canvas.clear();
    auto p = llada(4, 4, 4);
    p.cfg_scale = s;
    std::vector<float> conf;
    SamplerCallbacks cb;
    cb.on_step = [&](const StepInfo& st) {
      conf.insert(conf.end(), st.confidences.begin(), st.confidences.end());
    };
    const auto r = generate(src, kPrompt, p, cb);
    if (s == 0.0) {
      EXPECT_EQ(r.answer, (std::vector<int32_t>{1, 1, 1, 1}));
      EXPECT_EQ(src.calls_canvas.size(), 4u);  // one canvas per step
      continue;
    }
    EXPECT_EQ(r.answer, (std::vector<int32_t>{2, 2, 2, 2}));
    const double expected = std::exp(3.8) / (std::exp(3.8) + std::exp(2.0) + 13.0);
    ASSERT_EQ(conf.size(), 4u);
    for (float c : conf) EXPECT_NEAR(c, expected, 1e-6);
    // Two canvases per step: the canvas, then the same with every prompt position masked.
    ASSERT_EQ(src.calls_canvas.size(), 8u);
    for (size_t i = 0; i < 8; i += 2) {
      auto masked = src.calls_canvas[i];
      for (size_t j = 0; j < kPrompt.size(); ++j) masked[j] = kMask;
      EXPECT_EQ(src.calls_canvas[i + 1], masked);
      EXPECT_EQ(std::vector<int32_t>(src.calls_canvas[i].begin(), src.calls_canvas[i].begin() + 3), kPrompt);
    }
  }
}

TEST(Cfg, InvalidCombinationsAreUsageErrors) {
  auto p = llada(4, 4, 4);
  p.cfg_scale = -1;
  EXPECT_THROW(check_params(p, 3, kVocab), dllm::UsageError);
  p.cfg_scale = 1;
  p.cache = CacheMode::kPrefix;
  EXPECT_THROW(check_params(p, 3, kVocab), dllm::UsageError);
  p.cache = CacheMode::kNone;
  EXPECT_NO_THROW(check_params(p, 3, kVocab));
  p.schedule = Schedule::kTimesteps;
  EXPECT_THROW(check_params(p, 3, kVocab), dllm::UsageError);
}
