// The denoising loops on scripted logits, against schedules and choices worked out by hand from
// LLaDA generate.py and Dream generation_utils.py (_sample, sample_tokens).
#include "diffusion/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.h"
#include "scripted_source.h"

using namespace dllm::diffusion;
using dllm::test::peaked;
using dllm::test::ScriptedSource;

namespace {

constexpr int32_t kMask = 15;  // mask id of the scripted 16-id vocabulary
constexpr int64_t kVocab = 16;

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

SamplerParams dream(int64_t max_tokens, int64_t steps, DreamAlg alg) {
  SamplerParams p;
  p.schedule = Schedule::kTimesteps;
  p.max_tokens = max_tokens;
  p.steps = steps;
  p.alg = alg;
  p.mask_id = kMask;
  p.shift_logits = false;
  p.early_stop = false;
  return p;
}

struct Step {
  int64_t block;
  int64_t block_begin, block_end;
  std::vector<int32_t> positions, tokens;
  std::vector<float> conf;
  int64_t masks_left;
  int64_t stable;
  bool final;
};

SamplerCallbacks recorder(std::vector<Step>& steps) {
  SamplerCallbacks cb;
  cb.on_step = [&steps](const StepInfo& s) {
    steps.push_back({s.block,
                     s.block_begin,
                     s.block_end,
                     {s.positions.begin(), s.positions.end()},
                     {s.tokens.begin(), s.tokens.end()},
                     {s.confidences.begin(), s.confidences.end()},
                     s.masks_left,
                     s.stable_answer_len,
                     s.answer_final});
  };
  return cb;
}

/// Every position p gets token tok(p) with probability conf(p), the same at every step.
ScriptedSource static_source(std::function<int32_t(int32_t)> tok, std::function<double(int32_t)> conf) {
  return ScriptedSource(kVocab, [=](std::span<const int32_t>, int32_t row, float* out) {
    peaked(out, kVocab, tok(row), conf(row), kMask);
  });
}

const std::vector<int32_t> kPrompt = {1, 2, 3};

}  // namespace

// 2 blocks of 4, 4 steps -> 2 steps per block, counts [2, 2]. Block 0 (positions 3..6) has
// confidences .3 .9 .5 .7; block 1 (7..10) has .99 everywhere, higher than anything in block 0:
// still nothing of block 1 is committed while block 0 runs (generate.py l.109).
TEST(Llada, BlocksAndLowConfidenceTopK) {
  const std::map<int32_t, double> conf = {{3, .3}, {4, .9}, {5, .5}, {6, .7}};
  auto src = static_source([](int32_t p) { return p % 10; },
                           [&](int32_t p) { return p < 7 ? conf.at(p) : 0.99 - 0.01 * (p - 7); });
  std::vector<Step> steps;
  const auto r = generate(src, kPrompt, llada(8, 4, 4), recorder(steps));
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].positions, (std::vector<int32_t>{4, 6}));  // .9 and .7
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{7, 8}));  // .99 and .98
  EXPECT_EQ(steps[3].positions, (std::vector<int32_t>{9, 10}));
  EXPECT_EQ(steps[0].block, 0);
  EXPECT_EQ(steps[2].block, 1);
  // Canvas positions of the blocks: the prompt is 3 tokens, the blocks 4.
  EXPECT_EQ(steps[1].block_begin, 3);
  EXPECT_EQ(steps[1].block_end, 7);
  EXPECT_EQ(steps[2].block_begin, 7);
  EXPECT_EQ(steps[3].block_end, 11);
  EXPECT_NEAR(steps[0].conf[0], .9, 1e-6);
  EXPECT_EQ(steps[3].masks_left, 0);
  // Only the current block's masked positions go through the LM head.
  EXPECT_EQ(src.calls_rows[0], (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(src.calls_rows[1], (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(src.calls_rows[2], (std::vector<int32_t>{7, 8, 9, 10}));
  // The model sees the canvas as it stands: prompt, committed tokens, masks.
  EXPECT_EQ(src.calls_canvas[1],
            (std::vector<int32_t>{1, 2, 3, kMask, 4, kMask, 6, kMask, kMask, kMask, kMask}));
  EXPECT_EQ(r.answer, (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 0}));
  EXPECT_EQ(r.steps_run, 4);
  EXPECT_FALSE(r.stopped_early);
}

// 32-token block, 10 steps: commits follow get_num_transfer_tokens [4,4,3,...].
TEST(Llada, CommitsFollowTransferCounts) {
  auto src = static_source([](int32_t p) { return 5; }, [](int32_t p) { return 0.2 + 0.01 * p; });
  std::vector<Step> steps;
  generate(src, kPrompt, llada(32, 10, 32), recorder(steps));
  const std::vector<size_t> expect = {4, 4, 3, 3, 3, 3, 3, 3, 3, 3};
  ASSERT_EQ(steps.size(), expect.size());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].positions.size(), expect[i]) << "step " << i;
  // Most confident first: confidence grows with the position, so the last positions go first.
  EXPECT_EQ(steps[0].positions, (std::vector<int32_t>{31, 32, 33, 34}));
}

// remasking=random: k uniformly random masked positions of the block per step. Over 4000 seeds each
// of the 4 positions of the block is in step 0's pair with probability 2/4.
TEST(Llada, RandomRemaskingWithinBlock) {
  auto src = static_source([](int32_t) { return 5; }, [](int32_t p) { return 0.1 * (p % 7) + 0.1; });
  auto p = llada(8, 4, 4);
  p.remasking = Remasking::kRandom;
  std::vector<int64_t> hits(4, 0);
  const int n = 4000;
  for (int seed = 0; seed < n; ++seed) {
    p.seed = static_cast<uint64_t>(seed);
    std::vector<Step> steps;
    generate(src, kPrompt, p, recorder(steps));
    ASSERT_EQ(steps.size(), 4u);
    for (size_t s = 0; s < 4; ++s) {
      ASSERT_EQ(steps[s].positions.size(), 2u);
      for (int32_t pos : steps[s].positions) {
        const int32_t lo = s < 2 ? 3 : 7;
        ASSERT_TRUE(pos >= lo && pos < lo + 4) << "step " << s << " pos " << pos;
      }
    }
    for (int32_t pos : steps[0].positions) hits[pos - 3]++;
  }
  const double sd = std::sqrt(n * 0.5 * 0.5);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(static_cast<double>(hits[i]), n * 0.5, 5 * sd) << i;
}

// Temperature > 0: tokens vary with the seed, confidence stays the noise-free softmax, and the
// result depends on the seed only (not on the thread count).
TEST(Llada, TemperatureSeedAndThreads) {
  ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    for (int i = 0; i < kVocab; ++i) out[i] = static_cast<float>(0.1 * ((i * 7 + row * 3) % 11));
  });
  auto p = llada(16, 8, 8);
  p.temperature = 1.0;
  p.seed = 77;
  std::vector<std::vector<int32_t>> outs;
  for (int threads : {1, 2, 4}) {
    p.n_threads = threads;
    outs.push_back(generate(src, kPrompt, p).canvas);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
  p.seed = 78;
  EXPECT_NE(generate(src, kPrompt, p).canvas, outs[0]);
  // Reported confidences: softmax of the noise-free row at the committed token.
  std::vector<Step> steps;
  p.seed = 5;
  generate(src, kPrompt, p, recorder(steps));
  for (const auto& s : steps)
    for (size_t j = 0; j < s.positions.size(); ++j) {
      const int32_t row = s.positions[j];
      double z = 0, l_tok = 0;
      for (int i = 0; i < kVocab; ++i) {
        if (i == kMask) continue;
        const double l = static_cast<float>(0.1 * ((i * 7 + row * 3) % 11));
        z += std::exp(l);
        if (i == s.tokens[j]) l_tok = l;
      }
      EXPECT_NEAR(s.conf[j], std::exp(l_tok) / z, 1e-6);
    }
}

// generate.py asserts; we give usage errors that name the valid choices.
TEST(Llada, InvalidCombinationsAreUsageErrors) {
  auto src = static_source([](int32_t) { return 1; }, [](int32_t) { return 0.5; });
  auto expect_msg = [&](SamplerParams p, const std::string& needle) {
    try {
      generate(src, kPrompt, p);
      FAIL() << "no error for " << needle;
    } catch (const dllm::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(e.exit_code(), 2);
    }
  };
  expect_msg(llada(100, 100, 32), "use max_tokens 96 or 128");
  expect_msg(llada(100, 100, 32), "25");  // a block length dividing 100
  expect_msg(llada(128, 10, 32), "use steps 8 or 12");
  expect_msg(llada(128, 2, 32), "use steps 4");
  expect_msg(llada(0, 8, 32), "max_tokens must be at least 1");
  expect_msg(llada(-5, 8, 32), "max_tokens must be at least 1");
  expect_msg(llada(64, 0, 32), "steps must be at least 1");
  auto d = dream(0, 4, DreamAlg::kOrigin);
  expect_msg(d, "max_tokens must be at least 1");
  d = dream(8, 4, DreamAlg::kOrigin);
  d.top_p = 0;
  expect_msg(d, "top_p");
  EXPECT_TRUE(src.calls_rows.empty());  // nothing ran
}

TEST(Sampler, WarnsAboveFourTokensPerStepWithoutThreshold) {
  auto src = static_source([](int32_t) { return 1; }, [](int32_t) { return 0.5; });
  std::vector<std::string> warned;
  SamplerCallbacks cb;
  cb.on_warning = [&](const std::string& w) { warned.push_back(w); };
  auto r = generate(src, kPrompt, llada(64, 8, 32), cb);  // 32 / 4 = 8 per step
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(r.warnings, warned);
  EXPECT_NE(warned[0].find("8 tokens"), std::string::npos) << warned[0];
  warned.clear();
  generate(src, kPrompt, llada(64, 16, 32), cb);  // 4 per step: fine
  EXPECT_TRUE(warned.empty());
  auto p = llada(64, 8, 32);
  p.threshold = 0.9;
  generate(src, kPrompt, p, cb);
  EXPECT_TRUE(warned.empty());
  generate(src, kPrompt, dream(64, 8, DreamAlg::kMaskgitPlus), cb);
  EXPECT_EQ(warned.size(), 1u);
}

// ---- Dream ----

// The logit shift: position i is predicted by the model's row i-1.
TEST(Dream, LogitShiftAsksForPreviousRow) {
  // Row r predicts token r % 10 (so position i gets (i - 1) % 10).
  auto src = static_source([](int32_t r) { return r % 10; }, [](int32_t r) { return 0.5 + 0.01 * r; });
  auto p = dream(4, 2, DreamAlg::kMaskgitPlus);
  p.shift_logits = true;
  const auto r = generate(src, kPrompt, p);
  EXPECT_EQ(src.calls_rows[0], (std::vector<int32_t>{2, 3, 4, 5}));  // masked positions 3..6
  EXPECT_EQ(r.answer, (std::vector<int32_t>{2, 3, 4, 5}));
  p.shift_logits = false;
  ScriptedSource src2 =
      static_source([](int32_t r) { return r % 10; }, [](int32_t r) { return 0.5 + 0.01 * r; });
  EXPECT_EQ(generate(src2, kPrompt, p).answer, (std::vector<int32_t>{3, 4, 5, 6}));
  // Empty prompt: position 0 reuses row 0 (torch.cat([logits[:, :1], logits[:, :-1]])).
  ScriptedSource src3 =
      static_source([](int32_t r) { return r % 10; }, [](int32_t r) { return 0.5 + 0.01 * r; });
  p.shift_logits = true;
  EXPECT_EQ(generate(src3, std::vector<int32_t>{}, p).answer, (std::vector<int32_t>{0, 0, 1, 2}));
  EXPECT_EQ(src3.calls_rows[0], (std::vector<int32_t>{0, 1, 2}));
}

// Three masked positions with distributions chosen so each algorithm picks a different one first
// (3 masks, 2 steps: step 0 reveals int(3 * .4995) = 1):
//   A (pos 3): [.5, .5]           p .5   margin 0   entropy .693 (lowest)
//   B (pos 4): [.6, .2, .2]       p .6   margin .4  entropy .950
//   C (pos 5): [.55, .05 x 9]     p .55  margin .5  entropy 1.677
// maskgit_plus takes B, topk_margin C, entropy (negative entropy, most certain first) A.
TEST(Dream, EachAlgorithmsChoice) {
  ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    std::vector<double> p(kVocab, 0.0);
    if (row == 3) p[1] = p[2] = 0.5;
    if (row == 4) p[3] = 0.6, p[4] = p[5] = 0.2;
    if (row == 5)
      for (int i = 0; i < 10; ++i) p[i] = i == 6 ? 0.55 : 0.05;  // nine ids at .05
    dllm::test::from_probs(out, p);
  });
  auto first_commit = [&](DreamAlg alg) {
    std::vector<Step> steps;
    generate(src, kPrompt, dream(3, 2, alg), recorder(steps));
    EXPECT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].positions.size(), 1u);
    return steps[0].positions[0];
  };
  EXPECT_EQ(first_commit(DreamAlg::kMaskgitPlus), 4);
  EXPECT_EQ(first_commit(DreamAlg::kTopkMargin), 5);
  EXPECT_EQ(first_commit(DreamAlg::kEntropy), 3);
}

// Schedules through the loop: 8 masks, 4 steps -> 1, 2, 2, 3 (schedule_test has the arithmetic).
TEST(Dream, LoopRevealsScheduleCounts) {
  auto src = static_source([](int32_t) { return 4; }, [](int32_t p) { return 0.3 + 0.01 * p; });
  std::vector<Step> steps;
  const auto r = generate(src, kPrompt, dream(8, 4, DreamAlg::kEntropy), recorder(steps));
  ASSERT_EQ(steps.size(), 4u);
  const std::vector<size_t> expect = {1, 2, 2, 3};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(steps[i].positions.size(), expect[i]);
  // No blocks: every step's block is the whole answer, canvas positions [3, 11).
  EXPECT_EQ(steps[0].block_begin, 3);
  EXPECT_EQ(steps[3].block_end, 11);
  EXPECT_EQ(r.steps_planned, 4);
  // 256 / 256: step 0 reveals 0, so its forward pass is skipped; 255 passes run.
  auto src2 = static_source([](int32_t) { return 4; }, [](int32_t) { return 0.5; });
  const auto r2 = generate(src2, kPrompt, dream(256, 256, DreamAlg::kMaskgitPlus));
  EXPECT_EQ(r2.steps_run, 255);
  EXPECT_EQ(r2.steps_planned, 255);
  EXPECT_EQ(r2.answer.size(), 256u);
}

// origin: each masked position is revealed at step 0 with probability 1 - s/t = .24975 (64 masks,
// 4 steps); over 200 seeds (12800 draws) the fraction is within 5 standard deviations.
TEST(Dream, OriginRevealProbability) {
  auto src = static_source([](int32_t) { return 4; }, [](int32_t) { return 0.5; });
  auto p = dream(64, 4, DreamAlg::kOrigin);
  int64_t revealed = 0, trials = 0;
  for (int seed = 0; seed < 200; ++seed) {
    p.seed = static_cast<uint64_t>(seed);
    bool first = true;
    int64_t n0 = 0;
    SamplerCallbacks cb;
    cb.on_step = [&](const StepInfo& s) {
      if (first) n0 = static_cast<int64_t>(s.positions.size());
      first = false;
    };
    // Step 0 may reveal nothing (then no callback for it): read its count from masks_left instead.
    const auto r = generate(src, kPrompt, p, cb);
    EXPECT_EQ(r.answer.size(), 64u);  // the last step reveals everything
    // The first forward pass belongs to step 0 unless step 0 drew nothing; with 64 draws at .25
    // that has probability .75^64 ~ 1e-8, so treat the first pass as step 0.
    revealed += n0;
    trials += 64;
  }
  const double frac = static_cast<double>(revealed) / trials;
  const double sd = std::sqrt(0.24975 * (1 - 0.24975) / trials);
  EXPECT_NEAR(frac, 0.24975, 5 * sd);
}

// alg_temp > 0: positions drawn from softmax(confidence / alg_temp). Two masked positions with
// p(x0) .9 and .6, alg_temp .5, one revealed at step 0 (2 masks, 2 steps... int(2 * .4995) = 0,
// so use 3 masks with the third at very low confidence): P(first) = e^1.8 / (e^1.8 + e^1.2 + e^(2c)).
TEST(Dream, AlgTempSamplesPositions) {
  const std::map<int32_t, double> conf = {{3, 0.9}, {4, 0.6}, {5, 0.1}};
  auto src = static_source([](int32_t) { return 4; }, [&](int32_t r) { return conf.at(r); });
  auto p = dream(3, 2, DreamAlg::kMaskgitPlus);
  p.alg_temp = 0.5;
  std::map<int32_t, int64_t> hits;
  const int n = 4000;
  for (int seed = 0; seed < n; ++seed) {
    p.seed = static_cast<uint64_t>(seed);
    std::vector<Step> steps;
    generate(src, kPrompt, p, recorder(steps));
    ASSERT_EQ(steps[0].positions.size(), 1u);
    hits[steps[0].positions[0]]++;
  }
  const double w3 = std::exp(0.9 / 0.5), w4 = std::exp(0.6 / 0.5), w5 = std::exp(0.1 / 0.5);
  const double p3 = w3 / (w3 + w4 + w5), p4 = w4 / (w3 + w4 + w5);
  EXPECT_NEAR(hits[3], n * p3, 5 * std::sqrt(n * p3 * (1 - p3)));
  EXPECT_NEAR(hits[4], n * p4, 5 * std::sqrt(n * p4 * (1 - p4)));
}

// top_k = 1 makes temperature sampling greedy; top_p filters through the loop too.
TEST(Dream, TopKOneIsGreedyAtAnyTemperature) {
  ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    for (int i = 0; i < kVocab; ++i) out[i] = static_cast<float>(0.05 * i) + (i == row % 7 ? 0.53f : 0.0f);
  });
  auto p = dream(6, 3, DreamAlg::kMaskgitPlus);
  p.temperature = 5.0;
  p.top_k = 1;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    p.seed = seed;
    const auto r = generate(src, kPrompt, p);
    for (size_t i = 0; i < r.answer.size(); ++i) {
      const int32_t row = static_cast<int32_t>(i + kPrompt.size());
      // Argmax of 0.05 i + 0.53 [i == row % 7] over ids 0..14 (15 = mask excluded).
      int best = 0;
      double bv = -1e9;
      for (int id = 0; id < kVocab; ++id) {
        if (id == kMask) continue;
        const double v = static_cast<float>(0.05 * id) + (id == row % 7 ? 0.53f : 0.0f);
        if (v > bv) bv = v, best = id;
      }
      EXPECT_EQ(r.answer[i], best);
    }
  }
}

// ---- Guards ----

// The mask id and ids the tokenizer lacks have the largest logits and are still never committed.
TEST(Guards, NeverSampleMaskOrUnsampleableIds) {
  ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    for (int i = 0; i < kVocab; ++i) out[i] = static_cast<float>((i * 5 + row) % 7) * 0.3f;
    out[kMask] = 30.0f;
    out[13] = 25.0f;  // beyond the tokenizer's 13 ids
    out[14] = 25.0f;
  });
  std::vector<bool> sampleable(13, true);
  sampleable[7] = false;  // an UNUSED id inside the range
  for (int variant = 0; variant < 12; ++variant) {
    SamplerParams p = variant < 6 ? llada(8, 4, 4) : dream(8, 4, static_cast<DreamAlg>(variant % 4));
    p.sampleable = sampleable;
    p.temperature = variant % 2 ? 1.5 : 0.0;
    if (variant == 3) p.remasking = Remasking::kRandom;
    if (variant == 9) p.top_p = 0.9;
    if (variant == 11) p.alg_temp = 0.3;
    for (uint64_t seed = 0; seed < 10; ++seed) {
      p.seed = seed;
      const auto r = generate(src, kPrompt, p);
      for (size_t i = kPrompt.size(); i < r.canvas.size(); ++i) {
        const int32_t t = r.canvas[i];
        ASSERT_TRUE(t >= 0 && t < 13 && t != 7) << "variant " << variant << " token " << t;
      }
    }
  }
}

// Early stop: the answer is final once the first position after the prompt that is masked or an
// end token holds an end token.
TEST(Guards, EarlyStopWhenAnswerIsFinal) {
  constexpr int32_t kEnd = 9;
  // Positions 3, 4 get tokens 1, 2 (confidence .5, .6); position 5 gets the end token at .99;
  // the rest (6..10) end tokens at .2. LLaDA 8 tokens, 1 block, 8 steps: one commit per step.
  auto src = static_source([](int32_t p) { return p == 3   ? 1
                                                  : p == 4 ? 2
                                                           : kEnd; },
                           [](int32_t p) {
                             return p == 3 ? .5 : p == 4 ? .6 : p == 5 ? .99 : .2;
                           });
  auto p = llada(8, 8, 8);
  p.end_ids = {kEnd, 11};
  p.early_stop = true;
  std::vector<Step> steps;
  auto r = generate(src, kPrompt, p, recorder(steps));
  // Step 0 commits position 5 (end, .99): position 3 still masked, not final. Step 1 commits 4 (.6),
  // step 2 commits 3 (.5): now the first masked-or-end position is 5 = end -> stop after 3 steps.
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_FALSE(steps[0].final);
  EXPECT_FALSE(steps[1].final);
  EXPECT_TRUE(steps[2].final);
  EXPECT_EQ(steps[1].stable, 0);
  EXPECT_EQ(steps[2].stable, 2);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.steps_run, 3);
  EXPECT_EQ(r.answer, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(r.ended_with_end_token);
  // Off: every step runs; the answer is the same.
  p.early_stop = false;
  auto r2 = generate(src, kPrompt, p);
  EXPECT_EQ(r2.steps_run, 8);
  EXPECT_FALSE(r2.stopped_early);
  EXPECT_EQ(r2.answer, r.answer);
}

// An all-end-token canvas stops after the first step and prints nothing, not mask text.
TEST(Guards, AllEndTokensStopAtOnce) {
  auto src = static_source([](int32_t) { return 11; }, [](int32_t p) { return 0.9 - 0.01 * p; });
  auto p = dream(16, 16, DreamAlg::kEntropy);
  p.end_ids = {11};
  p.early_stop = true;
  const auto r = generate(src, kPrompt, p);
  // 16 masks, 16 steps: step 0 reveals int(16 * .999/16) = 0 (skipped), step 1 reveals
  // int(16 * .0666) = 1: position 3 (highest p, so lowest entropy) -> the answer is final.
  EXPECT_EQ(r.steps_run, 1);
  EXPECT_TRUE(r.stopped_early);
  EXPECT_TRUE(r.answer.empty());
  EXPECT_TRUE(r.ended_with_end_token);
  EXPECT_EQ(std::count(r.canvas.begin(), r.canvas.end(), kMask), 15);  // masks stay in the canvas only
}

// ---- Threshold decoding (Fast-dLLM get_transfer_index) ----

// One block of 4 with confidences .95 .5 .92 .3, threshold .9: step 0 commits the two above .9;
// step 1 none is above: the most confident (.5) only; step 2: .3.
TEST(Threshold, LladaCommitsAboveTauAndAtLeastOne) {
  const std::map<int32_t, double> conf = {{3, .95}, {4, .5}, {5, .92}, {6, .3}};
  auto src = static_source([](int32_t p) { return p; }, [&](int32_t p) { return conf.at(p); });
  auto p = llada(4, 4, 4);
  p.threshold = 0.9;
  std::vector<Step> steps;
  const auto r = generate(src, kPrompt, p, recorder(steps));
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].positions, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{4}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{6}));
  EXPECT_EQ(r.answer, (std::vector<int32_t>{3, 4, 5, 6}));
}

// Blocks still bound threshold decoding, and Dream gets the same rule (ranked by p(x0)).
TEST(Threshold, BlocksAndDream) {
  auto conf = [](int32_t p) { return p % 2 ? 0.95 : 0.4; };
  auto src = static_source([](int32_t p) { return p % 10; }, conf);
  auto p = llada(8, 8, 4);
  p.threshold = 0.9;
  std::vector<Step> steps;
  generate(src, kPrompt, p, recorder(steps));
  // Block 0 = 3..6: odd 3, 5 at .95, then 4, then 6 (both .4: one per step, lower position first).
  ASSERT_GE(steps.size(), 3u);
  EXPECT_EQ(steps[0].positions, (std::vector<int32_t>{3, 5}));
  EXPECT_EQ(steps[1].positions, (std::vector<int32_t>{4}));
  EXPECT_EQ(steps[2].positions, (std::vector<int32_t>{6}));
  EXPECT_EQ(steps[3].positions, (std::vector<int32_t>{7, 9}));
  EXPECT_EQ(steps[3].block, 1);
  auto d = dream(8, 8, DreamAlg::kEntropy);
  d.threshold = 0.9;
  d.block_length = 4;
  std::vector<Step> dsteps;
  ScriptedSource src2 = static_source([](int32_t p) { return p % 10; }, conf);
  generate(src2, kPrompt, d, recorder(dsteps));
  ASSERT_EQ(dsteps.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(dsteps[i].positions, steps[i].positions) << i;
}

// Rows large enough for the threaded path (rows x vocab >= 2^16): 1, 2 and 4 threads give the same
// canvas for LLaDA with Gumbel noise and Dream with categorical sampling, top_p and alg_temp.
TEST(Sampler, ThreadCountDoesNotChangeOutput) {
  constexpr int64_t kBig = 20000;
  ScriptedSource src(kBig, [](std::span<const int32_t> canvas, int32_t row, float* out) {
    uint64_t h = 1469598103934665603ull ^ static_cast<uint64_t>(row);
    for (int32_t t : canvas) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
    for (int64_t i = 0; i < kBig; ++i) {
      h = h * 6364136223846793005ull + 1442695040888963407ull;
      out[i] = static_cast<float>((h >> 40) % 1000) * 0.004f;
    }
  });
  std::vector<SamplerParams> configs;
  auto l = llada(16, 4, 8);
  l.temperature = 0.8;
  l.mask_id = kBig - 1;
  configs.push_back(l);
  auto d = dream(16, 4, DreamAlg::kEntropy);
  d.temperature = 0.6;
  d.top_p = 0.9;
  d.alg_temp = 0.2;
  d.mask_id = kBig - 1;
  configs.push_back(d);
  for (auto p : configs) {
    p.seed = 2024;
    std::vector<std::vector<int32_t>> outs;
    for (int threads : {1, 2, 4}) {
      p.n_threads = threads;
      outs.push_back(generate(src, kPrompt, p).canvas);
    }
    EXPECT_EQ(outs[0], outs[1]);
    EXPECT_EQ(outs[0], outs[2]);
    p.seed = 2025;
    EXPECT_NE(generate(src, kPrompt, p).canvas, outs[0]);
  }
}

// Temperature 0 is argmax for every seed (llama-diffusion-cli at --temp 0 still samples at T = 1
// from the top-k/top-p-filtered distribution: docs/sampling.md).
TEST(Sampler, TemperatureZeroIsArgmaxForEverySeed) {
  ScriptedSource src(kVocab, [](std::span<const int32_t>, int32_t row, float* out) {
    // Nearly flat rows: sampling at T = 1 would almost never reproduce the argmax everywhere.
    for (int i = 0; i < kVocab; ++i) out[i] = 0.01f * static_cast<float>((i * 3 + row) % kVocab);
  });
  auto argmax = [](int32_t row) {
    int best = -1;
    float bv = 0;
    for (int i = 0; i < kVocab; ++i) {
      const float v = 0.01f * static_cast<float>((i * 3 + row) % kVocab);
      if (i != kMask && (best < 0 || v > bv)) bv = v, best = i;
    }
    return best;
  };
  std::vector<SamplerParams> configs = {llada(8, 8, 8), dream(8, 8, DreamAlg::kOrigin),
                                        dream(8, 8, DreamAlg::kMaskgitPlus), dream(8, 8, DreamAlg::kEntropy)};
  configs[1].top_p = 0.95;  // llama.cpp's defaults do not make T = 0 random here
  configs[1].top_k = 40;
  for (auto p : configs)
    for (uint64_t seed = 0; seed < 8; ++seed) {
      p.seed = seed;
      const auto r = generate(src, kPrompt, p);
      ASSERT_EQ(r.answer.size(), 8u);
      for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r.answer[i], argmax(static_cast<int32_t>(i + kPrompt.size())));
    }
}

// With a threshold the block loop runs until the block is full (Fast-dLLM's `while True`), so
// `steps` needs no divisibility and does not bound the number of passes.
TEST(Threshold, StepsDoNotMatter) {
  auto src = static_source([](int32_t p) { return p % 10; }, [](int32_t) { return 0.5; });
  auto p = llada(8, 3, 4);  // 3 is not a multiple of 2 blocks: fine with a threshold
  p.threshold = 0.9;
  const auto r = generate(src, kPrompt, p);
  EXPECT_EQ(r.steps_run, 8);  // nothing reaches .9: one commit per pass
  EXPECT_EQ(r.answer.size(), 8u);
  p.threshold.reset();
  EXPECT_THROW(generate(src, kPrompt, p), dllm::UsageError);
}
