// The block-diffusion loop (LLaDA2's HF generate, diffusion/block_diffusion.cpp) on scripted logits,
// against traces worked by hand from modeling_llada2_moe.py `generate`: blocks counted from position
// 0, the transfer schedule block_length // steps with the remainder first, the threshold with the
// scheduled-count fallback, the three end-token rules, and the rows each step forwards with the exact
// cache and without it.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "diffusion/sampler.h"
#include "scripted_source.h"

namespace dllm::diffusion {
namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kMask = 15, kEos = 14;

/// Per canvas position: the token the scripted model predicts there and its probability.
struct Pred {
  int32_t token;
  double p;
};

/// A source whose row for position `pos` is peaked at script[pos] (whatever the rest of the canvas),
/// recording the rows each pass forwards.
class Recorder : public test::ScriptedSource {
 public:
  explicit Recorder(std::vector<Pred> script)
      : ScriptedSource(kVocab,
                       [this](std::span<const int32_t>, int32_t row, float* out) {
                         const Pred& pr = script_[static_cast<size_t>(row)];
                         test::peaked(out, kVocab, pr.token, pr.p, kMask);
                       }),
        script_(std::move(script)) {}
  void forward(std::span<const forward::Segment> segments) override {
    for (const forward::Segment& s : segments) passes.push_back({s.first, s.n_rows()});
    ScriptedSource::forward(segments);
  }
  std::vector<std::pair<int64_t, int64_t>> passes;  ///< (first row, rows) of every pass

 private:
  std::vector<Pred> script_;
};

SamplerParams params(int64_t max_tokens, int64_t block, int64_t steps, CacheMode cache) {
  SamplerParams p;
  p.schedule = Schedule::kBlockDiffusion;
  p.max_tokens = max_tokens;
  p.block_length = block;
  p.steps = steps;
  p.threshold = 0.9;
  p.mask_id = kMask;
  p.end_ids = {kEos};
  p.cache = cache;
  p.n_threads = 1;
  return p;
}

struct Trace {
  std::vector<std::vector<int32_t>> committed;  ///< positions per step
  GenerateResult result;
};

Trace run(Recorder& src, const std::vector<int32_t>& prompt, const SamplerParams& p) {
  Trace t;
  SamplerCallbacks cb;
  cb.on_step = [&](const StepInfo& s) { t.committed.emplace_back(s.positions.begin(), s.positions.end()); };
  t.result = generate(src, prompt, p, cb);
  return t;
}

TEST(BlockDiffusion, TransferCounts) {
  // _get_num_transfer_tokens(32, 32) = 32 x 1; (4, 3) = [2, 1, 1]; (32, 5) = [7, 7, 6, 6, 6].
  EXPECT_EQ(block_transfer_counts(32, 32), std::vector<int64_t>(32, 1));
  EXPECT_EQ(block_transfer_counts(4, 3), (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(block_transfer_counts(32, 5), (std::vector<int64_t>{7, 7, 6, 6, 6}));
}

// Prompt 3, block 4, max_tokens 7: canvas ceil(10 / 4) * 4 = 12, blocks [0,4) (the prompt's 3 tokens
// and position 3), [4,8), [8,12) (positions 10, 11 padding after the answer's end at 10); steps 3
// per block, counts [2, 1, 1], threshold 0.9 (strictly above).
//   block 0, step 0 (k 2): one mask, 3 at 0.5: none above, so min(2, 1) = 1: {3}
//   block 1, step 0 (k 2): 4 .95, 5 .97, 6 .99 above, 7 .3: 3 >= 2 above: {4, 5, 6}
//           step 1 (k 1): 7 .3: {7}
//   block 2, step 0 (k 2): 8 .6, 9 .5, 10 .7, 11 .4: none above: the two best {8, 10}
//           step 1 (k 1): 9 .5 beats 11 .4: {9}; the answer [3, 10) is full: stop (11 stays masked)
const std::vector<Pred> kScript = {{0, .5},  {0, .5}, {0, .5}, {1, .5}, {2, .95}, {3, .97},
                                   {4, .99}, {5, .3}, {6, .6}, {7, .5}, {8, .7},  {9, .4}};
const std::vector<int32_t> kPrompt = {10, 11, 12};

// planned_steps worked by hand: each block from the prompt's last one runs until its masks are
// committed at the scheduled counts. Prompt 22, block 32, 64 tokens: the canvas is 96 (3 blocks);
// block 0 holds 10 masks, blocks 1 and 2 hold 32.
TEST(BlockDiffusion, PlannedStepsPerBlockFromItsMasks) {
  EXPECT_EQ(planned_steps(params(64, 32, 32, CacheMode::kExact), 22), 10 + 32 + 32);  // counts 1 each
  EXPECT_EQ(planned_steps(params(64, 32, 8, CacheMode::kExact), 22), 3 + 8 + 8);      // counts 4 each
  // 8 tokens: one block (canvas 30 -> 32) of 10 masks, steps capped at 8: counts 4, so 3 steps.
  EXPECT_EQ(planned_steps(params(8, 32, 32, CacheMode::kExact), 22), 3);
  // A prompt of whole blocks: 2 blocks of 32 masks, 5 steps each (counts 7, 7, 6, 6, 6).
  EXPECT_EQ(planned_steps(params(64, 32, 5, CacheMode::kExact), 64), 10);
}

TEST(BlockDiffusion, ScheduleAndThresholdFallbackTrace) {
  for (const CacheMode cache : {CacheMode::kExact, CacheMode::kNone}) {
    Recorder src(kScript);
    const Trace t = run(src, kPrompt, params(7, 4, 3, cache));
    EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{3}, {4, 5, 6}, {7}, {8, 10}, {9}}));
    EXPECT_EQ(t.result.answer, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(t.result.canvas.size(), 12u);
    if (cache == CacheMode::kExact) {
      // Each block's first step folds the finished block in; later steps run the active block only.
      EXPECT_EQ(src.passes,
                (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {0, 8}, {4, 4}, {4, 8}, {8, 4}}));
    } else {
      // The reference's x[:(k+1)B] every step.
      EXPECT_EQ(src.passes,
                (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {0, 8}, {0, 8}, {0, 12}, {0, 12}}));
    }
  }
}

TEST(BlockDiffusion, StepsCappedAtMaxTokens) {
  // steps = min(steps, gen_length // minimal_topk): max_tokens 2 caps 32 steps at 2, counts [2, 2]
  // over a block of 4: block 0's one mask at step 0, block 1 (positions 4, 5 of the answer) at step 0.
  std::vector<Pred> s(8, Pred{1, .5});
  Recorder src(s);
  const Trace t = run(src, kPrompt, params(2, 4, 32, CacheMode::kExact));
  EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{3}, {4, 5}}));
}

// Early stop: block 1, step 0 commits 4 (.99) and an end token at 5 (.98); the first end token has
// no mask before it: stop there. The answer is cut before it.
TEST(BlockDiffusion, EndTokenWithNoMaskBeforeItStops) {
  std::vector<Pred> s = kScript;
  s[4] = {2, .99};
  s[5] = {kEos, .98};
  s[6] = {4, .3};
  s[7] = {5, .2};
  Recorder src(s);
  const Trace t = run(src, kPrompt, params(6, 4, 3, CacheMode::kExact));
  EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{3}, {4, 5}}));
  EXPECT_EQ(t.result.answer, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(t.result.ended_with_end_token);
  EXPECT_TRUE(t.result.stopped_early);
}

// An end token committed with a mask before it does not stop the step loop; a later step that fills
// that mask commits no end token, so it does not stop either (HF checks only steps that commit one).
// The block then finishes, holds an end token, and the run stops before block 2.
//   block 1, step 0 (k 2): 5 end .99, 6 .98 above (4 .3, 7 .2): {5, 6}
//            step 1 (k 1): 4 .3 beats 7 .2: {4};  step 2 (k 1): {7}; stop after the block.
TEST(BlockDiffusion, StopAfterABlockHoldingAnEndToken) {
  std::vector<Pred> s = kScript;
  s[4] = {2, .3};
  s[5] = {kEos, .99};
  s[6] = {4, .98};
  s[7] = {5, .2};
  Recorder src(s);
  const Trace t = run(src, kPrompt, params(6, 4, 3, CacheMode::kExact));
  EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{3}, {5, 6}, {4}, {7}}));
  EXPECT_EQ(t.result.answer, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(t.result.ended_with_end_token);
  // Without eos early stop, the same: the end-of-block rule alone stops it.
  SamplerParams p = params(6, 4, 3, CacheMode::kNone);
  p.early_stop = false;
  Recorder src2(s);
  EXPECT_EQ(run(src2, kPrompt, p).committed, t.committed);
}

TEST(BlockDiffusion, TemperatureZeroIsGreedy) {
  // The predicted token holds only 0.3 of the mass (the rest spread over 13 ids): sampling would
  // often pick another; T = 0 takes the argmax whatever the seed.
  std::vector<Pred> s(12, Pred{7, .3});
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Recorder src(s);
    SamplerParams p = params(6, 4, 3, CacheMode::kExact);
    p.seed = seed;
    EXPECT_EQ(run(src, kPrompt, p).result.answer, std::vector<int32_t>(6, 7)) << seed;
  }
}

// LLaDA2.1 editing (SGLang joint_threshold.py) on a model whose predictions depend on the canvas.
// Prompt 4 (one whole block), block 4, max_tokens 4: one block [4, 8); threshold 0.5, edit threshold
// 0.8. Position 4 predicts 1 (.9) while 5 is masked and 3 (.85) once 5 holds 2; 5 predicts 2 (.6); 6
// predicts 4 (.4); 7 as `seven` says.
class EditScript : public test::ScriptedSource {
 public:
  explicit EditScript(std::function<Pred(int32_t own)> seven)
      : ScriptedSource(kVocab,
                       [this](std::span<const int32_t> canvas, int32_t row, float* out) {
                         Pred p{0, .5};
                         if (row == 4) p = canvas[5] == 2 ? Pred{3, .85} : Pred{1, .9};
                         if (row == 5) p = {2, .6};
                         if (row == 6) p = {4, .4};
                         if (row == 7) p = seven_(canvas[7]);
                         test::peaked(out, kVocab, p.token, p.p, kMask);
                       }),
        seven_(std::move(seven)) {}

 private:
  std::function<Pred(int32_t)> seven_;
};

SamplerParams edit_params(int64_t max_post_edit) {
  SamplerParams p = params(4, 4, 32, CacheMode::kExact);
  p.threshold = 0.5;
  p.edit_threshold = 0.8;
  p.max_post_edit_steps = max_post_edit;
  return p;
}

//   step 0: masks 4 .9, 5 .6 above .5 (6 .4, 7 .3 not): {4, 5}
//   step 1: masks 6 .4, 7 .3: none above, the best {6}; edit: 4 now predicts 3 (.85 > .8): {4, 6}
//   step 2: mask 7: {7};  step 3 (no mask): nothing changes; the block ends.
TEST(BlockDiffusionEditing, EditsThenEndsWhenNothingChanges) {
  const std::vector<int32_t> prompt = {10, 11, 12, 13};
  EditScript src([](int32_t) { return Pred{5, .3}; });
  Trace t;
  SamplerCallbacks cb;
  cb.on_step = [&](const StepInfo& s) { t.committed.emplace_back(s.positions.begin(), s.positions.end()); };
  t.result = generate(src, prompt, edit_params(2), cb);
  EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{4, 5}, {4, 6}, {7}, {}}));
  EXPECT_EQ(t.result.answer, (std::vector<int32_t>{3, 2, 4, 5}));
}

// Position 7 flips between 6 and 7 (.9) forever: after the last mask, max_post_edit_steps (2) steps.
//   step 0: {4, 5, 7 (6)};  step 1: {4 (3), 6, 7 (7)};  steps 2, 3 (no mask): {7} each; then stop.
TEST(BlockDiffusionEditing, PostEditStepsAreCapped) {
  const std::vector<int32_t> prompt = {10, 11, 12, 13};
  EditScript src([](int32_t own) { return own == 6 ? Pred{7, .9} : Pred{6, .9}; });
  Trace t;
  SamplerCallbacks cb;
  cb.on_step = [&](const StepInfo& s) { t.committed.emplace_back(s.positions.begin(), s.positions.end()); };
  t.result = generate(src, prompt, edit_params(2), cb);
  EXPECT_EQ(t.committed, (std::vector<std::vector<int32_t>>{{4, 5, 7}, {4, 6, 7}, {7}, {7}}));
  EXPECT_EQ(t.result.answer, (std::vector<int32_t>{3, 2, 4, 7}));
}

}  // namespace
}  // namespace dllm::diffusion
