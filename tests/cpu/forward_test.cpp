// CpuForward on tiny synthetic models (written here with GgufWriter) against an f64 reference forward
// written in this file from the formulas of the two architectures (issue 2, item 4), not from our ops:
//   x = E[tok]; per layer: h = x / sqrt(mean(x^2) + eps) * g; q = Wq h (+bq), k, v likewise;
//   rotate q, k per head: pair i (LLaDA (2i, 2i+1), Dream (i, i + hd/2)) by pos * base^(-2i/hd);
//   a_h = softmax(q_h K_{h/(n_head/n_kv)}^T / sqrt(hd)) V_{h/(n_head/n_kv)}, no mask; x += Wo a;
//   h = rmsnorm(x) * g2; x += Wdown (silu(Wgate h) * (Wup h)); logits = Wout rmsnorm(x) * gout.
// With Q4_K / Q6_K weights the reference rounds each matrix input to Q8_K first (what ggml-cpu and
// our forward do), written here from the block definition: d = max / -127 with max the signed value
// of largest magnitude, q = round-half-even(x * (-127 / max)) clamped to 127.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "cpu/dispatch.h"
#include "cpu/forward.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "test_util.h"

namespace dllm {
namespace {

using test::SyntheticModel;
using test::SyntheticSpec;
using test::WeightMix;
using Vec = std::vector<double>;

/// Q8_K round trip of one row (n a multiple of 256), in f32 arithmetic as the format defines it.
Vec q8k_round_trip(const Vec& x) {
  Vec y(x.size());
  for (size_t b = 0; b < x.size(); b += 256) {
    float max = 0, amax = 0;
    for (size_t j = 0; j < 256; ++j) {
      const float v = static_cast<float>(x[b + j]);
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        max = v;
      }
    }
    if (amax == 0) continue;
    const float iscale = -127.0f / max;
    const float d = 1.0f / iscale;
    for (size_t j = 0; j < 256; ++j) {
      const float s = iscale * static_cast<float>(x[b + j]);
      const double q = std::min(127.0, static_cast<double>(std::nearbyint(s)));  // default mode: half-even
      y[b + j] = q * d;
    }
  }
  return y;
}

struct Reference {
  const SyntheticModel& m;
  bool emulate_q8k = true;
  bool neox = false;

  /// y = W x for W stored [n_in, n_out] (n_out rows of n_in); x rounded to Q8_K when W is Q4_K/Q6_K.
  Vec matvec(const std::string& name, const Vec& x) const {
    const Vec& w = m[name];
    const auto type = m.types.at(name);
    const bool q = emulate_q8k && (type == gguf::GgmlType::Q4_K || type == gguf::GgmlType::Q6_K);
    const Vec xin = q ? q8k_round_trip(x) : x;
    const size_t n_in = x.size(), n_out = w.size() / n_in;
    Vec y(n_out, 0.0);
    for (size_t o = 0; o < n_out; ++o) {
      double s = 0;
      for (size_t i = 0; i < n_in; ++i) s += w[o * n_in + i] * xin[i];
      y[o] = s;
    }
    return y;
  }

  Vec rmsnorm(const Vec& x, const std::string& weight) const {
    const Vec& g = m[weight];
    double ss = 0;
    for (const double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + m.spec.rms_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * g[i];
    return y;
  }

  void rotate(Vec& v, int64_t n_heads, int64_t hd, int64_t pos) const {
    for (int64_t h = 0; h < n_heads; ++h) {
      for (int64_t i = 0; i < hd / 2; ++i) {
        const int64_t a = h * hd + (neox ? i : 2 * i), b = h * hd + (neox ? i + hd / 2 : 2 * i + 1);
        const double theta = pos * std::pow(double(m.spec.rope_base), -2.0 * i / hd);
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
      }
    }
  }

  /// logits [n][n_vocab] for every position.
  std::vector<Vec> forward(const std::vector<int32_t>& tokens) const {
    const SyntheticSpec& s = m.spec;
    const int64_t n = tokens.size(), d = s.n_embd, hd = s.n_embd / s.n_head;
    const bool bias = s.biases.value_or(s.arch == "dream");
    std::vector<Vec> x(n);
    const Vec& emb = m["token_embd.weight"];
    for (int64_t t = 0; t < n; ++t)
      x[t].assign(emb.begin() + tokens[t] * d, emb.begin() + (tokens[t] + 1) * d);
    for (int64_t l = 0; l < s.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      std::vector<Vec> q(n), k(n), v(n);
      for (int64_t t = 0; t < n; ++t) {
        const Vec h = rmsnorm(x[t], p + "attn_norm.weight");
        q[t] = matvec(p + "attn_q.weight", h);
        k[t] = matvec(p + "attn_k.weight", h);
        v[t] = matvec(p + "attn_v.weight", h);
        if (bias) {
          for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += m[p + "attn_q.bias"][i];
          for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += m[p + "attn_k.bias"][i];
          for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += m[p + "attn_v.bias"][i];
        }
        rotate(q[t], s.n_head, hd, t);
        rotate(k[t], s.n_head_kv, hd, t);
      }
      for (int64_t t = 0; t < n; ++t) {
        Vec a(s.n_head * hd, 0.0);
        for (int64_t h = 0; h < s.n_head; ++h) {
          const int64_t g = h / (s.n_head / s.n_head_kv);
          Vec e(n);
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[j][g * hd + i];
            e[j] = dot / std::sqrt(double(hd));
            mx = std::max(mx, e[j]);
          }
          for (double& z : e) sum += (z = std::exp(z - mx));
          for (int64_t j = 0; j < n; ++j) {
            for (int64_t i = 0; i < hd; ++i) a[h * hd + i] += e[j] / sum * v[j][g * hd + i];
          }
        }
        const Vec o = matvec(p + "attn_output.weight", a);
        for (int64_t i = 0; i < d; ++i) x[t][i] += o[i];
      }
      for (int64_t t = 0; t < n; ++t) {
        const Vec h = rmsnorm(x[t], p + "ffn_norm.weight");
        const Vec g = matvec(p + "ffn_gate.weight", h), u = matvec(p + "ffn_up.weight", h);
        Vec act(g.size());
        for (size_t i = 0; i < g.size(); ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const Vec down = matvec(p + "ffn_down.weight", act);
        for (int64_t i = 0; i < d; ++i) x[t][i] += down[i];
      }
    }
    std::vector<Vec> logits(n);
    const std::string head = s.tied_output ? "token_embd.weight" : "output.weight";
    for (int64_t t = 0; t < n; ++t) logits[t] = matvec(head, rmsnorm(x[t], "output_norm.weight"));
    return logits;
  }
};

/// Largest per-row relative RMS difference ||ours - ref|| / ||ref||.
double max_rel_rms(const std::vector<float>& ours, const std::vector<Vec>& ref) {
  double worst = 0;
  const size_t v = ref[0].size();
  for (size_t r = 0; r < ref.size(); ++r) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < v; ++i) {
      diff += (ours[r * v + i] - ref[r][i]) * (ours[r * v + i] - ref[r][i]);
      norm += ref[r][i] * ref[r][i];
    }
    worst = std::max(worst, std::sqrt(diff / norm));
  }
  return worst;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = dist(rng);
  return t;
}

struct Case {
  std::string name;
  SyntheticSpec spec;
  double bound;  // max per-row relative RMS error vs the f64 reference
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

SyntheticSpec make_spec(const std::string& arch, WeightMix mix) {
  SyntheticSpec s;
  s.arch = arch;
  s.mix = mix;
  s.n_vocab = 97;  // not a multiple of the matmul row granularity: the last work item is partial
  if (arch == "dream") {
    s.n_head_kv = 2;
    s.rope_base = 1e6f;
    s.rms_eps = 1e-6f;
  } else {
    s.rope_base = 5e5f;
  }
  if (mix != WeightMix::kQ4KM) {
    // Odd sizes (not multiples of 256): F32/F16/BF16 matrices need no Q8_K rounding.
    s.n_embd = 96;
    s.n_head = 4;
    s.n_ff = 160;
    s.n_layer = 3;
  } else {
    s.n_layer = 2;  // layer 1 gets Q6_K attn_v / ffn_down as in Q4_K_M (use_more_bits: i >= 7n/8)
  }
  return s;
}

class SyntheticForward : public ::testing::TestWithParam<Case> {};

TEST_P(SyntheticForward, MatchesF64Reference) {
  const Case c = GetParam();
  test::TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  const SyntheticModel synth = test::write_synthetic_model(c.spec, path);
  const auto file = gguf::GgufFile::open(path);
  const auto model = model::Model::load(file);

  // Quantized models: a short sequence. Q8_K rounding is discontinuous: where our f32 value and the
  // reference's f64 value of an activation straddle a rounding tie (a ~1e-5 chance per value), the
  // two runs take different int8 values and from there drift apart to the size of the Q8_K noise
  // (the effect ../shared/reference/README.md "Numerics" describes against llama.cpp). 5 tokens x 2
  // layers keep the number of rounded values (~7000) small enough that no tie is hit; attention and
  // RoPE over longer sequences are checked tightly by the F32 cases.
  const bool quantized = c.spec.mix == WeightMix::kQ4KM;
  const auto tokens = random_tokens(quantized ? 5 : 13, c.spec.n_vocab, 7);
  std::vector<int32_t> rows(tokens.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
  Reference ref{synth, /*emulate_q8k=*/true, /*neox=*/c.spec.arch == "dream"};
  const auto expected = ref.forward(tokens);

  for (const cpu::Isa isa : {cpu::Isa::kScalar, cpu::Isa::kAvx2, cpu::Isa::kAvxVnni, cpu::Isa::kAvx512Vnni}) {
    if (!cpu::isa_supported(isa)) {
      std::printf("[skipped] %s: this CPU cannot run %s\n", c.name.c_str(), cpu::isa_name(isa));
      continue;
    }
    cpu::ForwardOptions opt;
    opt.max_tokens = 16;
    opt.n_threads = 2;
    opt.isa = isa;
    cpu::CpuForward fwd(model, opt);
    ASSERT_EQ(fwd.n_vocab(), c.spec.n_vocab);
    std::vector<float> logits(rows.size() * fwd.n_vocab());
    fwd.forward(tokens, rows, logits.data());

    const double err = max_rel_rms(logits, expected);
    std::printf("[figures] %s (%s): max row rel RMS vs f64 reference %.2e (bound %.0e)\n", c.name.c_str(),
                cpu::isa_name(isa), err, c.bound);
    EXPECT_LE(err, c.bound) << cpu::isa_name(isa);

    // The comparison is sharp enough to see a convention error: the other RoPE pairing is far off.
    Reference wrong = ref;
    wrong.neox = !ref.neox;
    EXPECT_GT(max_rel_rms(logits, wrong.forward(tokens)), 100 * c.bound);
    if (quantized) {
      // ... and the Q8_K activation rounding: without it the reference is far further away.
      Reference exact = ref;
      exact.emulate_q8k = false;
      const double err_exact = max_rel_rms(logits, exact.forward(tokens));
      std::printf("[figures] %s (%s): vs f64 reference without Q8_K rounding %.2e\n", c.name.c_str(),
                  cpu::isa_name(isa), err_exact);
      EXPECT_GT(err_exact, 100 * err);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SyntheticForward,
    ::testing::Values(Case{"llada_f32", make_spec("llada", WeightMix::kF32), 1e-5},
                      Case{"dream_f32", make_spec("dream", WeightMix::kF32), 1e-5},
                      Case{"llada_f16_bf16", make_spec("llada", WeightMix::kFloatMix), 1e-5},
                      Case{"dream_f16_bf16", make_spec("dream", WeightMix::kFloatMix), 1e-5},
                      Case{"llada_q4km", make_spec("llada", WeightMix::kQ4KM), 1e-5},
                      Case{"dream_q4km", make_spec("dream", WeightMix::kQ4KM), 1e-5}),
    [](const auto& info) { return info.param.name; });

TEST(SyntheticForward, TiedOutputAndShortSequence) {
  SyntheticSpec spec = make_spec("dream", WeightMix::kF32);
  spec.tied_output = true;
  test::TempDir dir;
  const SyntheticModel synth = test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const auto model = model::Model::load(file);
  cpu::ForwardOptions opt;
  opt.max_tokens = 40;
  opt.n_threads = 1;
  cpu::CpuForward fwd(model, opt);
  const std::vector<int32_t> tokens = {5, 96, 0};
  std::vector<float> logits(3 * fwd.n_vocab());
  const std::vector<int32_t> rows = {0, 1, 2};
  fwd.forward(tokens, rows, logits.data());
  EXPECT_LE(max_rel_rms(logits, Reference{synth, true, true}.forward(tokens)), 1e-5);
}

TEST(SyntheticForward, ThreadCountsGiveIdenticalLogits) {
  const SyntheticSpec spec = make_spec("dream", WeightMix::kQ4KM);
  test::TempDir dir;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const auto model = model::Model::load(file);
  const auto tokens = random_tokens(21, spec.n_vocab, 3);
  const std::vector<int32_t> rows = {20, 0, 7};
  std::vector<std::vector<float>> out;
  for (const int threads : {1, 2, 3, 4}) {
    cpu::ForwardOptions opt;
    opt.max_tokens = 21;
    opt.n_threads = threads;
    cpu::CpuForward fwd(model, opt);
    EXPECT_EQ(fwd.n_threads(), threads);
    out.emplace_back(rows.size() * fwd.n_vocab());
    fwd.forward(tokens, rows, out.back().data());
  }
  for (size_t i = 1; i < out.size(); ++i) {
    EXPECT_EQ(std::memcmp(out[0].data(), out[i].data(), out[0].size() * sizeof(float)), 0)
        << "threads " << i + 1;
  }
}

/// Expects `f` to throw dllm::Error with exactly `message`.
template <typename F>
void expect_error(F&& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(ForwardErrors, MatrixTypeWithoutKernel) {
  for (const auto& [name, type, type_name] :
       {std::tuple{"blk.0.attn_q.weight", gguf::GgmlType::Q8_0, "Q8_0"},
        std::tuple{"blk.1.ffn_down.weight", gguf::GgmlType::Q5_K, "Q5_K"},
        std::tuple{"output.weight", gguf::GgmlType::Q2_K, "Q2_K"}}) {
    SyntheticSpec spec = make_spec("llada", WeightMix::kQ4KM);
    spec.type_override = {{name, type}};
    test::TempDir dir;
    test::write_synthetic_model(spec, (dir / "m.gguf").string());
    const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
    const auto model = model::Model::load(file);  // the model itself accepts any matrix type
    cpu::ForwardOptions opt;
    opt.max_tokens = 4;
    expect_error([&] { cpu::CpuForward fwd(model, opt); },
                 std::string("tensor ") + name + " is " + type_name +
                     ": matrix kernels exist for Q4_K, Q6_K, F32, F16, BF16");
  }
}

TEST(ForwardErrors, BadInputs) {
  const SyntheticSpec spec = make_spec("llada", WeightMix::kF32);
  test::TempDir dir;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const auto model = model::Model::load(file);
  cpu::ForwardOptions opt;
  opt.max_tokens = 4;
  opt.n_threads = 1;
  cpu::CpuForward fwd(model, opt);
  std::vector<float> logits(8 * fwd.n_vocab());
  const std::vector<int32_t> row0 = {0};
  expect_error(
      [&] {
        fwd.forward(std::vector<int32_t>{1, 2, 3, 4, 5}, row0, logits.data());
      },
      "forward: 5 tokens, expected 1..4 (max_tokens)");
  expect_error([&] { fwd.forward(std::vector<int32_t>{}, row0, logits.data()); },
               "forward: 0 tokens, expected 1..4 (max_tokens)");
  expect_error(
      [&] {
        fwd.forward(std::vector<int32_t>{1, 97}, row0, logits.data());
      },
      "token id 97 at position 1 is outside the vocabulary [0, 97)");
  expect_error(
      [&] {
        fwd.forward(std::vector<int32_t>{1, 2}, std::vector<int32_t>{2}, logits.data());
      },
      "logits row 2 is outside the sequence [0, 2)");
  expect_error([&] { cpu::CpuForward bad(model, cpu::ForwardOptions{}); },
               "max_tokens must be positive (got 0)");
}

TEST(Threads, PhysicalCoreCount) {
  // Distinct cores among the CPUs this process may use: at least 1, at most the logical CPUs.
  const int n = cpu::physical_core_count();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace
}  // namespace dllm
