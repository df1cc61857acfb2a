// CpuForward with a K/V state (Fast-dLLM's prefix / dual KV cache: a refresh segment over the whole
// canvas, then window segments over the state) and with two segments in one pass (classifier-free
// guidance), each against the plain whole-sequence pass as the independent computation (itself
// checked against an f64 reference in forward_test.cpp):
//  - a refresh step is the full forward, bit for bit;
//  - a cached step over an unchanged canvas gives the full forward's window logits bit for bit;
//  - with one layer, K/V of a position depend only on its own token, so a cached step after the
//    window's tokens changed is still exact: equal to the full forward of the new canvas;
//  - with two layers, the cached K/V of the other positions are stale after a change (inside or
//    outside the window): the window logits differ from the full forward (the approximation is real);
//  - two segments in one pass give each sequence's own logits bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/forward.h"
#include "forward/pass.h"
#include "forward_util.h"
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

/// Bytes a K/V state holds per position: K and V of each layer, n_head_kv x head_dim floats each.
size_t kv_row_bytes(const model::Model& model) {
  const model::ModelConfig& c = model.config();
  return 2u * static_cast<size_t>(c.n_layer * c.n_head_kv * c.head_dim) * sizeof(float);
}

std::vector<float> full(cpu::CpuForward& fwd, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& rows) {
  return test::whole_logits(fwd, tokens, rows);
}

/// Fast-dLLM's step over the K/V state `kv` (what diffusion::Sequence sends): refresh = true, the
/// whole canvas into a cleared state (window ignored); else the rows [wb, we) against the state.
std::vector<float> windowed(cpu::CpuForward& fwd, const std::vector<int32_t>& tokens, int64_t wb, int64_t we,
                            const std::vector<int32_t>& rows, forward::KvState& kv, bool refresh) {
  std::vector<float> out(rows.size() * fwd.n_vocab());
  forward::Segment s;
  s.tokens = tokens;
  s.kv = &kv;
  s.logit_rows = rows;
  s.logits = out.data();
  if (refresh) {
    kv.clear();
  } else {
    s.tokens = std::span<const int32_t>(tokens).subspan(wb, we - wb);
    s.first = wb;
  }
  fwd.forward({&s, 1});
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

    forward::KvState cache;
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, 0, 0, all, cache, /*refresh=*/true), reference))
        << isa_name(isa);
    EXPECT_EQ(cache.rows(), 19);
    // K and V x 2 layers x the canvas's 19 positions (not max_tokens 24) x n_head_kv * head_dim floats.
    EXPECT_EQ(cache.bytes(), 19 * kv_row_bytes(m.model));

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

// A state cleared and refreshed with another canvas: its memory follows the longest canvas refreshed
// into it, never the forward's max_tokens (a server sized for 4096-token canvases would otherwise
// hold 4 GiB per LLaDA-8B sequence), and a shorter canvas in a larger state still gives the full
// forward bit for bit.
TEST_P(ForwardWindow, ACacheReusedForLongerAndShorterCanvasesStaysExact) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  cpu::ForwardOptions opt;
  opt.max_tokens = 64;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  const size_t row_bytes = kv_row_bytes(m.model);
  forward::KvState cache;
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

// A state told the rows its sequence will hold (KvState::expect_rows, as the exact block cache does
// with its canvas) gets room for all of them on the pass that first writes rows and keeps that
// capacity while later passes append blocks. Appending blocks of 6 is block-causal attention, so each
// block's logits must equal those rows of one pass over the whole canvas under
// MaskRule::block_causal(6) without a state; a state grown pass by pass must give them too.
TEST_P(ForwardWindow, AStateToldItsCanvasIsMadeOnceAndStaysExact) {
  const Case c = GetParam();
  const Loaded m(spec_for(c.arch, c.mix, 2));
  cpu::ForwardOptions opt;
  opt.max_tokens = 24;
  opt.n_threads = 2;
  cpu::CpuForward fwd(m.model, opt);
  const size_t row_bytes = kv_row_bytes(m.model);
  const auto tokens = random_tokens(18, 97, 13);
  const auto all = range(0, 18);
  std::vector<float> reference(all.size() * fwd.n_vocab());
  forward::Segment whole;
  whole.tokens = tokens;
  whole.mask = forward::MaskRule::block_causal(6);
  whole.logit_rows = all;
  whole.logits = reference.data();
  fwd.forward({&whole, 1});

  forward::KvState told, grown;
  told.expect_rows(18);
  for (int32_t b = 0; b < 18; b += 6) {
    const auto rows = range(b, b + 6);
    const std::vector<float> expected(reference.begin() + b * fwd.n_vocab(),
                                      reference.begin() + (b + 6) * fwd.n_vocab());
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, b, b + 6, rows, told, false), expected)) << b;
    EXPECT_TRUE(same_bits(windowed(fwd, tokens, b, b + 6, rows, grown, false), expected)) << b;
    EXPECT_EQ(told.bytes(), 18 * row_bytes) << b;
  }
  EXPECT_EQ(grown.bytes(), 24 * row_bytes);  // 6 rows, then doubled to 12, then to 24
  EXPECT_EQ(told.rows(), 18);
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
  forward::KvState cache;
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
  forward::KvState cache;
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
  const std::vector<int32_t> rows = {16, 3, 9};
  std::vector<float> out(2 * rows.size() * fwd.n_vocab());
  forward::Segment pair[2];
  pair[0].tokens = a;
  pair[1].tokens = b;
  for (int i = 0; i < 2; ++i) {
    pair[i].logit_rows = rows;
    pair[i].logits = out.data() + i * rows.size() * fwd.n_vocab();
  }
  fwd.forward(pair);
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
  forward::KvState cache;
  auto step = [&](int64_t wb, int64_t we, std::vector<int32_t> rows, forward::KvState* kv) {
    forward::Segment s;
    s.tokens = std::span<const int32_t>(tokens).subspan(wb, we - wb);
    s.first = wb;
    s.kv = kv;
    s.logit_rows = rows;
    s.logits = out.data();
    fwd.forward({&s, 1});
  };
  expect_error(
      [&] { step(2, 5, {3}, &cache); },
      "forward: the K/V state holds 0 positions, the segment starts at 2: run a refresh step first (the "
      "keys between would be missing)");
  windowed(fwd, tokens, 0, 0, {}, cache, true);
  EXPECT_EQ(cache.rows(), 10);
  expect_error([&] { step(5, 5, {}, &cache); }, "forward: 0 tokens, expected 1..16 (max_tokens)");
  expect_error([&] { step(5, 8, {4}, &cache); }, "logits row 4 is outside the window [5, 8)");
  expect_error([&] { step(5, 8, {}, nullptr); },
               "forward: a segment without a K/V state starts at position 0 (got 5)");
  // Positions past the RoPE table: a state of 10 rows and 7 more.
  const std::vector<int32_t> seven(7, 1);
  forward::Segment past;
  past.tokens = seven;
  past.first = 10;
  past.kv = &cache;
  expect_error([&] { fwd.forward({&past, 1}); }, "forward: positions 10..16 reach past max_tokens 16");
  forward::Segment two[2];
  two[0].tokens = two[1].tokens = tokens;
  expect_error([&] { fwd.forward(two); }, "forward: 20 activation rows, at most 16 (max_batch x max_tokens)");
  two[0].kv = two[1].kv = &cache;
  expect_error([&] { fwd.forward(two); }, "forward: segments 0 and 1 use the same K/V state");
  expect_error([&] { fwd.forward({}); }, "forward: no segments");
  EXPECT_EQ(cache.rows(), 10);  // nothing ran
}

}  // namespace
}  // namespace dllm
