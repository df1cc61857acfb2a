// CpuForward::forward_window (Fast-dLLM's prefix / dual KV cache) and forward_batch (two canvases in
// one pass, for classifier-free guidance), each against the plain full forward() as the independent
// computation (forward() itself is checked against an f64 reference in forward_test.cpp):
//  - a refresh step is the full forward, bit for bit;
//  - a cached step over an unchanged canvas gives the full forward's window logits bit for bit;
//  - with one layer, K/V of a position depend only on its own token, so a cached step after the
//    window's tokens changed is still exact: equal to the full forward of the new canvas;
//  - with two layers, the cached K/V of the other positions are stale after a change (inside or
//    outside the window): the window logits differ from the full forward (the approximation is real);
//  - forward_batch gives each sequence's forward() logits bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/forward.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "reference_forward.h"
#include "test_util.h"

namespace dllm {
namespace {

using test::expect_error;
using test::random_tokens;
using test::SyntheticSpec;
using test::WeightMix;

SyntheticSpec spec_for(const std::string& arch, WeightMix mix, int64_t n_layer) {
  SyntheticSpec s;
  s.arch = arch;
  s.mix = mix;
  s.n_layer = n_layer;
  s.n_vocab = 97;
  if (arch == "dream") s.n_head_kv = 2;  // GQA: the cache rows are n_head_kv * head_dim wide
  if (mix != WeightMix::kQ4KM) {
    s.n_embd = 96;
    s.n_ff = 160;
  }
  return s;
}

std::vector<int32_t> range(int32_t begin, int32_t end) {
  std::vector<int32_t> r;
  for (int32_t i = begin; i < end; ++i) r.push_back(i);
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

struct Loaded {
  test::TempDir dir;
  gguf::GgufFile file;
  model::Model model;
  explicit Loaded(const SyntheticSpec& spec)
      : file((test::write_synthetic_model(spec, (dir / "m.gguf").string()),
              gguf::GgufFile::open((dir / "m.gguf").string()))),
        model(model::Model::load(file)) {}
};

struct Case {
  std::string name;
  std::string arch;
  WeightMix mix;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class ForwardWindow : public ::testing::TestWithParam<Case> {};

std::vector<float> full(cpu::CpuForward& fwd, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& rows) {
  std::vector<float> out(rows.size() * fwd.n_vocab());
  fwd.forward(tokens, rows, out.data());
  return out;
}

std::vector<float> windowed(cpu::CpuForward& fwd, const std::vector<int32_t>& tokens, int64_t wb, int64_t we,
                            const std::vector<int32_t>& rows, cpu::KvCache& cache, bool refresh) {
  std::vector<float> out(rows.size() * fwd.n_vocab());
  fwd.forward_window(tokens, wb, we, rows, out.data(), cache, refresh);
  return out;
}

TEST_P(ForwardWindow, RefreshAndUnchangedStepsEqualTheFullForward) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  for (const Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni}) {
    if (!isa_supported(isa)) {
      std::printf("[skipped] %s: this CPU cannot run %s\n", c.name.c_str(), isa_name(isa));
      continue;
    }
    cpu::ForwardOptions opt;
    opt.max_tokens = 24;
    opt.n_threads = 2;
    opt.isa = isa;
    cpu::CpuForward fwd(m.model, opt);
    const auto tokens = random_tokens(19, 97, 11);  // "prompt" 7 + two blocks of 6
    const auto all = range(0, 19);
    const auto reference = full(fwd, tokens, all);

    cpu::KvCache cache;
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, 0, 0, all, cache, /*refresh=*/true), reference))
        << isa_name(isa);
    EXPECT_EQ(cache.n_tokens, 19);
    // K and V x 2 layers x the canvas's 19 positions (not max_tokens 24) x n_head_kv * head_dim floats.
    EXPECT_EQ(cache.bytes(),
              2u * 2 * 19 * m.model.config().n_head_kv * m.model.config().head_dim * sizeof(float));

    // Nothing changed since the refresh: prefix window [7, 19), dual window [7, 13), a window in the
    // middle of the block, and one that starts at 0.
    for (const auto& [wb, we] : std::vector<std::pair<int32_t, int32_t>>{{7, 19}, {7, 13}, {9, 11}, {0, 5}}) {
      const auto rows = range(wb, we);
      std::vector<float> expected;
      for (int32_t r : rows)
        expected.insert(expected.end(), reference.begin() + r * fwd.n_vocab(),
                        reference.begin() + (r + 1) * fwd.n_vocab());
      EXPECT_TRUE(same_bits(windowed(fwd, tokens, wb, we, rows, cache, false), expected))
          << isa_name(isa) << " window [" << wb << ", " << we << ")";
    }
  }
}

// A cache slot serves one sequence after another (the engine's slots): its memory follows the
// longest canvas refreshed into it, never the forward's max_tokens (a server sized for 4096-token
// canvases would otherwise hold 4 GiB per LLaDA-8B slot), and a shorter canvas in a larger cache
// still gives the full forward bit for bit.
TEST_P(ForwardWindow, ACacheReusedForLongerAndShorterCanvasesStaysExact) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  cpu::ForwardOptions opt;
  opt.max_tokens = 64;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  const size_t row_bytes = 2u * 2 * m.model.config().n_head_kv * m.model.config().head_dim * sizeof(float);
  cpu::KvCache cache;
  for (const auto& [n, capacity] : std::vector<std::pair<int32_t, int32_t>>{{12, 12}, {30, 30}, {9, 30}}) {
    const auto tokens = random_tokens(n, 97, 100 + n);
    const auto all = range(0, n);
    const auto reference = full(fwd, tokens, all);
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, 0, 0, all, cache, /*refresh=*/true), reference)) << n;
    EXPECT_EQ(cache.bytes(), capacity * row_bytes) << n;
    const auto rows = range(n / 2, n);
    std::vector<float> expected(reference.begin() + (n / 2) * fwd.n_vocab(), reference.end());
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, n / 2, n, rows, cache, false), expected)) << n;
  }
}

TEST_P(ForwardWindow, OneLayerStepAfterWindowChangeIsExact) {
  // One layer: the cached K/V of a position are projections of its own token's embedding, so they are
  // not stale when only window tokens changed; the cached step must equal the full forward.
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 1));
  cpu::ForwardOptions opt;
  opt.max_tokens = 24;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  auto tokens = random_tokens(19, 97, 5);
  cpu::KvCache cache;
  windowed(fwd, tokens, 0, 0, {18}, cache, true);
  tokens[8] = 3;  // commit two tokens of the block [7, 13)
  tokens[12] = 40;
  const auto dual_rows = range(7, 13);
  EXPECT_TRUE(same_bits(windowed(fwd, tokens, 7, 13, dual_rows, cache, false), full(fwd, tokens, dual_rows)));
  tokens[15] = 41;  // the suffix changes too: the prefix window [7, 19) recomputes it
  const auto prefix_rows = range(7, 19);
  EXPECT_TRUE(
      same_bits(windowed(fwd, tokens, 7, 19, prefix_rows, cache, false), full(fwd, tokens, prefix_rows)));
  // ... but a change outside the window is not seen: the cached K/V of position 2 are stale.
  tokens[2] = (tokens[2] + 1) % 97;
  const auto stale = windowed(fwd, tokens, 7, 13, dual_rows, cache, false);
  const double diff = max_abs_diff(stale, full(fwd, tokens, dual_rows));
  std::printf("[figures] %s, 1 layer, token outside the window changed: max |logit diff| %.3g\n",
              c.name.c_str(), diff);
  EXPECT_GT(diff, 1e-4);
}

TEST_P(ForwardWindow, TwoLayersStaleCacheIsAnApproximation) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  cpu::ForwardOptions opt;
  opt.max_tokens = 24;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  auto tokens = random_tokens(19, 97, 9);
  cpu::KvCache cache;
  windowed(fwd, tokens, 0, 0, {}, cache, true);
  tokens[9] = (tokens[9] + 1) % 97;  // only a window token changes
  const auto rows = range(7, 13);
  const auto cached = windowed(fwd, tokens, 7, 13, rows, cache, false);
  const double diff = max_abs_diff(cached, full(fwd, tokens, rows));
  std::printf("[figures] %s, 2 layers, window token changed: max |logit diff| vs full forward %.3g\n",
              c.name.c_str(), diff);
  EXPECT_GT(diff, 1e-4);  // layer-1 K/V of the other positions saw the old token
  // A new refresh brings it back to the full forward.
  EXPECT_TRUE(same_bits(windowed(fwd, tokens, 0, 0, rows, cache, true), full(fwd, tokens, rows)));
}

TEST_P(ForwardWindow, BatchOfTwoEqualsEachAlone) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  cpu::ForwardOptions opt;
  opt.max_tokens = 24;
  opt.max_batch = 2;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  const auto a = random_tokens(17, 97, 1);
  auto b = a;
  for (int i = 0; i < 6; ++i) b[i] = 96;  // the CFG pair: the same canvas with the prompt masked
  std::vector<int32_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  const std::vector<int32_t> rows = {16, 3, 9};
  std::vector<float> out(2 * rows.size() * fwd.n_vocab());
  fwd.forward_batch(both, 2, rows, out.data());
  auto expected = full(fwd, a, rows);
  const auto eb = full(fwd, b, rows);
  expected.insert(expected.end(), eb.begin(), eb.end());
  EXPECT_TRUE(same_bits(out, expected));
}

INSTANTIATE_TEST_SUITE_P(Models, ForwardWindow,
                         ::testing::Values(Case{"llada_f32", "llada", WeightMix::kF32},
                                           Case{"dream_f32", "dream", WeightMix::kF32},
                                           Case{"llada_q4km", "llada", WeightMix::kQ4KM},
                                           Case{"dream_q4km", "dream", WeightMix::kQ4KM}),
                         [](const auto& info) { return info.param.name; });

TEST(ForwardWindowErrors, BadWindowsAndBatches) {
  const Loaded m(spec_for("llada", WeightMix::kF32, 1));
  cpu::ForwardOptions opt;
  opt.max_tokens = 16;
  opt.n_threads = 1;
  cpu::CpuForward fwd(m.model, opt);
  const auto tokens = random_tokens(10, 97, 2);
  std::vector<float> out(16 * 97 * 2);
  cpu::KvCache cache;
  expect_error([&] { fwd.forward_window(tokens, 2, 5, std::vector<int32_t>{3}, out.data(), cache, false); },
               "forward_window: the KV cache holds 0 positions, the canvas has 10: run a refresh step first");
  fwd.forward_window(tokens, 0, 0, {}, out.data(), cache, true);
  expect_error([&] { fwd.forward_window(tokens, 5, 5, {}, out.data(), cache, false); },
               "forward_window: window [5, 5) is empty or outside the canvas [0, 10)");
  expect_error([&] { fwd.forward_window(tokens, 5, 11, {}, out.data(), cache, false); },
               "forward_window: window [5, 11) is empty or outside the canvas [0, 10)");
  expect_error([&] { fwd.forward_window(tokens, 5, 8, std::vector<int32_t>{4}, out.data(), cache, false); },
               "logits row 4 is outside the window [5, 8)");
  const std::vector<int32_t> shorter(tokens.begin(), tokens.end() - 1);
  expect_error([&] { fwd.forward_window(shorter, 5, 8, {}, out.data(), cache, false); },
               "forward_window: the KV cache holds 10 positions, the canvas has 9: run a refresh step first");
  expect_error([&] { fwd.forward_batch(tokens, 2, std::vector<int32_t>{0}, out.data()); },
               "forward_batch: 2 sequences, expected 1..1 (max_batch)");
}

}  // namespace
}  // namespace dllm
