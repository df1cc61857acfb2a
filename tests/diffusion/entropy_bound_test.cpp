// The entropy-bound sampler (diffusion/entropy_bound.h) against what llama.cpp PR #24423's
// llama-diffusion-cli did on the tiny DiffusionGemma file (tests/data/diffusion-gemma/cli: per-step
// logs of 9 runs, and the raw canvas logits of every step of defaults-seed1), and against a schedule
// worked by hand.
//   - the random numbers: the initial canvas and every step's u and renoise ids of all 9 runs;
//   - one step from its logits: argmax, sample, entropy, the accepted set and the next canvas, exactly;
//   - a whole run fed the recorded logits: the CLI's tokens, and the self-conditioning input it passed.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "diffusion/entropy_bound.h"
#include "diffusion/entropy_bound_simd.h"
#include "forward/pass.h"

namespace dllm::diffusion {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path cli_dir() {
  return fs::path(DLLM_SOURCE_DIR) / "tests" / "data" / "diffusion-gemma" / "cli";
}

std::vector<json> steps_of(const std::string& run) {
  std::ifstream f(cli_dir() / (run + ".steps.jsonl"));
  EXPECT_TRUE(f.good()) << run;
  std::vector<json> out;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(json::parse(line));
  return out;
}

json tokens_of(const std::string& run) {
  std::ifstream f(cli_dir() / (run + ".tokens.json"));
  return json::parse(f);
}

/// The run's sampler settings as the CLI resolved them (tokens.json "eb").
EntropyBoundParams params_of(const json& t, int64_t canvas) {
  EntropyBoundParams p;
  p.canvas_length = canvas;
  p.max_steps = t["eb"]["max_steps"].get<int64_t>();
  p.t_min = t["eb"]["t_min"].get<float>();
  p.t_max = t["eb"]["t_max"].get<float>();
  p.entropy_bound = t["eb"]["entropy_bound"].get<float>();
  p.stability = t["eb"]["stability"].get<int64_t>();
  p.confidence = t["eb"]["confidence"].get<float>();
  p.seed = t["seed"].get<uint32_t>();
  p.max_tokens = canvas * t["n_blocks_max"].get<int64_t>();
  p.end_ids = {1, 6, 11};  // llama.cpp's EOG set of the file (README "Tokenizer")
  return p;
}

constexpr int64_t kVocab = 512, kCanvas = 32;

const char* const kRuns[] = {"defaults-seed1", "defaults-seed2", "defaults-seed3",
                             "converge-seed1", "converge-seed2", "converge-seed3",
                             "blocks-seed1",   "blocks-seed2",   "blocks-seed3"};

TEST(EntropyBound, RandomNumbersFollowTheCli) {
  for (const char* run : kRuns) {
    const json t = tokens_of(run);
    const auto steps = steps_of(run);
    ASSERT_FALSE(steps.empty()) << run;
    std::unique_ptr<EbRng> rng;
    int64_t block = -1;
    for (const json& s : steps) {
      if (s["block"].get<int64_t>() != block) {  // a new block: a new std::mt19937(seed) and canvas
        block = s["block"].get<int64_t>();
        rng = std::make_unique<EbRng>(t["seed"].get<uint32_t>());
        std::vector<int32_t> canvas;
        for (int64_t i = 0; i < kCanvas; ++i) canvas.push_back(rng->token(kVocab));
        EXPECT_EQ(canvas, s["input_canvas"].get<std::vector<int32_t>>()) << run << " block " << block;
      }
      for (int64_t i = 0; i < kCanvas; ++i) {
        const float u = rng->uniform();
        const int32_t r = rng->token(kVocab);
        ASSERT_EQ(u, s["u"][i].get<float>()) << run << " step " << s["step"] << " position " << i;
        ASSERT_EQ(r, s["renoise"][i].get<int32_t>()) << run << " step " << s["step"] << " position " << i;
      }
    }
  }
}

std::vector<float> step_logits(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "defaults-seed1-b0-s%02lld.f32", static_cast<long long>(step));
  std::ifstream f(cli_dir() / "step-logits" / name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  std::vector<float> v(kCanvas * kVocab);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

// On each path (scalar: glibc's expf / logf as the PR; AVX-512: 16 at a time in double, rounded once):
// the CLI's argmax, samples, accepted positions and next canvases exactly, its entropies within 1e-6.
class EntropyBoundIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU cannot run " << isa_name(GetParam());
  }
};

TEST_P(EntropyBoundIsa, EachStepOfTheRecordedLogitsIsTheClis) {
  const auto steps = steps_of("defaults-seed1");
  const EntropyBoundParams p = params_of(tokens_of("defaults-seed1"), kCanvas);
  ASSERT_EQ(static_cast<int64_t>(steps.size()), p.max_steps);
  for (size_t k = 0; k < steps.size(); ++k) {
    const json& s = steps[k];
    const float t = eb_temperature(p, s["cur_step"].get<int64_t>());
    EXPECT_EQ(t, s["t"].get<float>()) << "step " << k;
    const auto logits = step_logits(static_cast<int64_t>(k));
    std::vector<int32_t> argmax, sampled;
    std::vector<float> entropy;
    for (int64_t i = 0; i < kCanvas; ++i) {
      const EbRow r = eb_row(&logits[i * kVocab], kVocab, 1.0f / t, s["u"][i].get<float>(), GetParam());
      argmax.push_back(r.argmax);
      sampled.push_back(r.sampled);
      entropy.push_back(r.entropy);
      EXPECT_NEAR(r.entropy, s["entropy"][i].get<float>(), 1e-6) << "step " << k << " position " << i;
    }
    EXPECT_EQ(argmax, s["argmax"].get<std::vector<int32_t>>()) << "step " << k;
    EXPECT_EQ(sampled, s["sampled"].get<std::vector<int32_t>>()) << "step " << k;
    const std::vector<char> acc = eb_accept(entropy, p.entropy_bound);
    std::vector<int32_t> accepted;
    for (int64_t i = 0; i < kCanvas; ++i)
      if (acc[i]) accepted.push_back(static_cast<int32_t>(i));
    EXPECT_EQ(accepted, s["accepted"].get<std::vector<int32_t>>()) << "step " << k;
    if (k + 1 < steps.size()) {
      std::vector<int32_t> next;
      for (int64_t i = 0; i < kCanvas; ++i)
        next.push_back(acc[i] ? sampled[i] : s["renoise"][i].get<int32_t>());
      EXPECT_EQ(next, steps[k + 1]["input_canvas"].get<std::vector<int32_t>>()) << "step " << k;
    }
  }
}

/// A forward pass that returns defaults-seed1's recorded logits step by step and checks what the
/// sequence asks of it (the prompt encoded once, the canvas rows after it, the self-conditioning input
/// = the previous step's logits at 1 / the previous temperature).
class RecordedForward final : public forward::Forward {
 public:
  RecordedForward(const std::vector<json>& steps, int64_t prompt_len)
      : steps_(steps), prompt_len_(prompt_len) {}
  int64_t n_vocab() const override { return kVocab; }
  forward::Capabilities capabilities() const override { return {true, true, 4096, 1}; }
  void forward(std::span<const forward::Segment> segs) override {
    EXPECT_EQ(segs.size(), 1u);
    const forward::Segment& s = segs[0];
    if (s.logits == nullptr) {  // the prompt's causal encoding
      EXPECT_EQ(s.first, 0);
      EXPECT_EQ(s.n_rows(), prompt_len_);
      EXPECT_EQ(s.mask, forward::MaskRule::causal());
      return;
    }
    const json& st = steps_[static_cast<size_t>(k_)];
    EXPECT_EQ(s.first, prompt_len_);
    EXPECT_EQ(s.mask, forward::MaskRule::causal_prompt(prompt_len_));
    EXPECT_EQ(std::vector<int32_t>(s.tokens.begin(), s.tokens.end()),
              st["input_canvas"].get<std::vector<int32_t>>())
        << "step " << k_;
    EXPECT_EQ(s.self_cond.empty(), k_ == 0) << "step " << k_;
    if (k_ > 0) {
      EXPECT_TRUE(std::equal(s.self_cond.begin(), s.self_cond.end(), prev_.begin())) << "step " << k_;
      EXPECT_EQ(s.self_cond_scale, st["sc_temp_inv"].get<float>()) << "step " << k_;
    }
    prev_ = step_logits(k_);
    std::copy(prev_.begin(), prev_.end(), s.logits);
    ++k_;
  }
  int64_t k_ = 0;

 private:
  const std::vector<json>& steps_;
  int64_t prompt_len_;
  std::vector<float> prev_;
};

TEST_P(EntropyBoundIsa, AWholeRunOnTheRecordedLogitsGivesTheClisTokens) {
  const json t = tokens_of("defaults-seed1");
  const auto steps = steps_of("defaults-seed1");
  const auto prompt = t["prompt_ids"].get<std::vector<int32_t>>();
  RecordedForward fwd(steps, static_cast<int64_t>(prompt.size()));
  EntropyBoundParams p = params_of(t, kCanvas);
  p.isa = GetParam();
  const EbResult r = generate_entropy_bound(fwd, prompt, p, kVocab);
  EXPECT_EQ(fwd.k_, 16);
  ASSERT_EQ(r.argmax.size(), 1u);
  EXPECT_EQ(r.argmax[0], t["blocks"][0]["argmax_canvas"].get<std::vector<int32_t>>());
  EXPECT_EQ(r.cut[0], t["blocks"][0]["cut"].get<int64_t>());
  EXPECT_EQ(r.answer, t["response_ids"].get<std::vector<int32_t>>());
}

// The AVX-512 passes against glibc's expf and logf (what the scalar path and the PR call): within one
// ulp everywhere, and the same float in all but a few of a million (each is computed in double and
// rounded once, glibc's within 0.502 ulp of the exact value). The argument and p are the scalar path's
// floats bit for bit; NaN logits give NaN.
TEST(EntropyBoundAvx512, ExpAndLogAreGlibcsToTheUlp) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "this CPU cannot run avx512vnni";
  const int64_t n = 1 << 20;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> logit(-40.0f, 25.0f);
  std::vector<float> row(n), e(n), p(n), t(n);
  for (float& x : row) x = logit(rng);
  row[5] = -INFINITY;
  row[6] = -1e30f;
  const float temp_inv = 1.0f / 0.7f, m = 25.0f * temp_inv;
  eb_exp_avx512(row.data(), n, temp_inv, m, e.data());
  float Z = 0.0f;
  for (const float x : e) Z += x;
  eb_plogp_avx512(e.data(), n, Z, p.data(), t.data());
  auto ulps = [](float a, float b) {
    return std::abs(std::bit_cast<int32_t>(a) - std::bit_cast<int32_t>(b));
  };
  int64_t exp_diff = 0, log_diff = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float want_e = std::exp(row[i] * temp_inv - m);
    ASSERT_LE(ulps(e[i], want_e), 1) << "exp(" << row[i] * temp_inv - m << ") = " << e[i] << ", glibc "
                                     << want_e;
    exp_diff += e[i] != want_e;
    const float want_p = e[i] / Z;
    ASSERT_EQ(std::bit_cast<uint32_t>(p[i]), std::bit_cast<uint32_t>(want_p)) << "i " << i;
    if (!(want_p > 0.0f)) continue;
    const float want_l = std::log(want_p);
    const float want_t = want_p * want_l;
    ASSERT_LE(ulps(t[i], want_t), 1) << "p log p at p = " << want_p;
    log_diff += t[i] != want_t;
  }
  EXPECT_EQ(e[5], 0.0f);
  EXPECT_EQ(e[6], 0.0f);
  EXPECT_LE(exp_diff, n / 1000) << "exp values differing from glibc's";
  EXPECT_LE(log_diff, n / 1000) << "p log p values differing from the scalar path's";
  std::printf("[figures] of %lld ids: exp differs from glibc's on %lld, p log p on %lld (by one ulp)\n",
              static_cast<long long>(n), static_cast<long long>(exp_diff), static_cast<long long>(log_diff));
  const float nan_row[3] = {0.0f, NAN, 1.0f};
  float nan_e[3];
  eb_exp_avx512(nan_row, 3, 1.0f, 1.0f, nan_e);
  EXPECT_TRUE(std::isnan(nan_e[1]));
  EXPECT_EQ(nan_e[2], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Paths, EntropyBoundIsa, ::testing::Values(Isa::kScalar, Isa::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

TEST(EntropyBound, ScheduleWorkedByHand) {
  EntropyBoundParams p;
  p.max_steps = 16;
  p.t_min = 0.45f;
  p.t_max = 0.9f;
  // t = 0.45 + 0.45 * cur/16: 0.9 at 16, 0.675 at 8, 0.478125 at 1 (float arithmetic, as the PR).
  EXPECT_FLOAT_EQ(eb_temperature(p, 16), 0.9f);
  EXPECT_FLOAT_EQ(eb_temperature(p, 8), 0.675f);
  EXPECT_FLOAT_EQ(eb_temperature(p, 1), 0.478125f);
  // Ascending entropy 1/16 (pos 1), 3/16 (pos 2), 3/8 (pos 0), 1/2 (pos 3) (exact in float); the sums
  // before each are 0, 1/16, 1/4, 5/8: with bound 1/4 positions 1, 2 and 0 pass (1/4 <= 1/4), 3 does not.
  const std::vector<float> h = {0.375f, 0.0625f, 0.1875f, 0.5f};
  EXPECT_EQ(eb_accept(h, 0.25), (std::vector<char>{1, 1, 1, 0}));
  EXPECT_EQ(eb_accept(h, 0.0), (std::vector<char>{0, 1, 0, 0}));  // the lowest always passes
  // Logits (0, ln 3) at t = 1: p = (1/4, 3/4); u = 0.2 picks id 0 (cumulative 1 >= 0.2 * 4), u = 0.3
  // id 1; H = -(1/4 ln 1/4 + 3/4 ln 3/4) = 0.5623351.
  const float row[2] = {0.0f, std::log(3.0f)};
  EXPECT_EQ(eb_row(row, 2, 1.0f, 0.2f).sampled, 0);
  EXPECT_EQ(eb_row(row, 2, 1.0f, 0.3f).sampled, 1);
  EXPECT_EQ(eb_row(row, 2, 1.0f, 0.3f).argmax, 1);
  EXPECT_NEAR(eb_row(row, 2, 1.0f, 0.3f).entropy, 0.5623351, 1e-6);
  // Four rows in one eb_rows call, each stopping its cumulative sum at a different id (a third id of
  // -inf, p = 0, added to the rows above): (0, ln 3) at u = 0.2 and 0.3 as above; reversed, (ln 3, 0)
  // at u = 0.3, p = (3/4, 1/4): id 0 (3 >= 1.2), argmax 0; (-inf, 0, 0) at u = 0.6, p = (0, 1/2,
  // 1/2): cumulative 0, 1, 2 against 1.2 picks id 2, argmax the first maximum (id 1), H = ln 2. The
  // p = 0 terms are skipped.
  const float a[3] = {0.0f, std::log(3.0f), -INFINITY}, b[3] = {std::log(3.0f), 0.0f, -INFINITY},
              c[3] = {-INFINITY, 0.0f, 0.0f};
  const float* rows[4] = {a, a, b, c};
  const float us[4] = {0.2f, 0.3f, 0.3f, 0.6f};
  EbRow got[4];
  const int32_t want_sampled[4] = {0, 1, 0, 2}, want_argmax[4] = {1, 1, 0, 1};
  const double want_h[4] = {0.5623351, 0.5623351, 0.5623351, 0.6931472};
  for (const Isa isa : {Isa::kScalar, Isa::kAvx512Vnni}) {
    if (!isa_supported(isa)) continue;
    eb_rows(rows, 4, 3, 1.0f, us, got, isa);
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(got[r].sampled, want_sampled[r]) << isa_name(isa) << " row " << r;
      EXPECT_EQ(got[r].argmax, want_argmax[r]) << isa_name(isa) << " row " << r;
      EXPECT_NEAR(got[r].entropy, want_h[r], 1e-6) << isa_name(isa) << " row " << r;
    }
  }
  EXPECT_THROW(eb_rows(rows, 0, 3, 1.0f, us, got), Error);
  EXPECT_THROW(eb_rows(rows, kEbRowsAtOnce + 1, 3, 1.0f, us, got), Error);
  // The CLI's cut: the first end id, or the start of six repeats at stride 1 or 2.
  const std::vector<int32_t> end = {1};
  EXPECT_EQ(eb_trim(std::vector<int32_t>{5, 6, 1, 7}, end), 2);
  EXPECT_EQ(eb_trim(std::vector<int32_t>{5, 9, 9, 9, 9, 9, 9, 9, 4}, end), 1);  // 9 x7: six repeats
  EXPECT_EQ(eb_trim(std::vector<int32_t>{5, 9, 9, 9, 9, 9, 9, 4}, end), 8);     // 9 x6: five
  // 7 8 x7 from position 1: seven 7s at stride 2 are six repeats; x6 are five.
  EXPECT_EQ(eb_trim(std::vector<int32_t>{3, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 2}, end), 1);
  EXPECT_EQ(eb_trim(std::vector<int32_t>{3, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 2}, end), 14);
}

}  // namespace
}  // namespace dllm::diffusion
