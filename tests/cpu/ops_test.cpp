// The row operations of the forward pass against f64 formulas written here: RMSNorm, RoPE in both
// pairings (an independent complex rotation), bidirectional attention with GQA.
#include "cpu/ops.h"
#include "model/rope_table.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

namespace dllm::cpu {
namespace {

using dllm::test::random_vector;

TEST(RmsNorm, MatchesF64Formula) {
  for (const int64_t n : {1, 7, 256, 4096}) {
    const auto x = random_vector(n, 1 + n, 3.0f);
    const auto w = random_vector(n, 2 + n);
    const float eps = 1e-5f;
    std::vector<float> y(n);
    rmsnorm(x.data(), w.data(), y.data(), n, eps);
    double ss = 0;
    for (const float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double ref = x[i] * inv * w[i];
      EXPECT_NEAR(y[i], ref, 1e-6 * std::abs(ref) + 1e-7) << "n=" << n << " i=" << i;
    }
  }
}

TEST(RmsNorm, EpsilonMatters) {
  // An all-zero row stays finite thanks to eps; a tiny row is scaled by 1/sqrt(mean + eps).
  const std::vector<float> x = {1e-3f, -1e-3f, 1e-3f, -1e-3f}, w = {1, 1, 1, 1};
  std::vector<float> y(4);
  rmsnorm(x.data(), w.data(), y.data(), 4, 1e-6f);
  EXPECT_NEAR(y[0], 1e-3 / std::sqrt(1e-6 + 1e-6), 1e-6);
  const std::vector<float> z(4, 0.0f);
  rmsnorm(z.data(), w.data(), y.data(), 4, 1e-6f);
  for (const float v : y) EXPECT_EQ(v, 0.0f);
}

/// RoPE from its definition: each pair (a, b) as the complex a + ib multiplied by e^{i pos theta_i},
/// theta_i = base^(-2i / head_dim). `norm` pairs (2i, 2i+1), otherwise (i, i + head_dim/2).
std::vector<double> rope_f64(const std::vector<float>& x, int64_t n_heads, int64_t hd, int64_t pos,
                             double base, bool norm) {
  std::vector<double> y(x.begin(), x.end());
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      const int64_t ia = h * hd + (norm ? 2 * i : i);
      const int64_t ib = h * hd + (norm ? 2 * i + 1 : i + hd / 2);
      const double theta = pos * std::pow(base, -2.0 * i / hd);
      const std::complex<double> r = std::complex<double>(x[ia], x[ib]) * std::polar(1.0, theta);
      y[ia] = r.real();
      y[ib] = r.imag();
    }
  }
  return y;
}

struct RopeCase {
  model::RopeMode mode;
  int64_t head_dim;
  double base;
};

void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << (c.mode == model::RopeMode::kNorm ? "norm" : "neox") << " hd=" << c.head_dim << " base=" << c.base;
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesComplexRotation) {
  const RopeCase rc = GetParam();
  const int64_t n_heads = 3, max_pos = 4100;
  const model::RopeTable table(rc.head_dim, max_pos, rc.base);
  for (const int64_t pos : {0, 1, 2, 17, 255, 4099}) {
    const auto x = random_vector(n_heads * rc.head_dim, 100 + pos);
    std::vector<float> y = x;
    rope(y.data(), n_heads, rc.head_dim, table.cos(pos), table.sin(pos), rc.mode);
    const auto ref = rope_f64(x, n_heads, rc.head_dim, pos, rc.base, rc.mode == model::RopeMode::kNorm);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], ref[i], 2e-6) << "pos=" << pos << " i=" << i;
    if (pos == 0) EXPECT_EQ(y, x);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RopeTest,
                         ::testing::Values(RopeCase{model::RopeMode::kNorm, 64, 500000.0},
                                           RopeCase{model::RopeMode::kNeox, 64, 1000000.0},
                                           RopeCase{model::RopeMode::kNorm, 128, 10000.0},
                                           RopeCase{model::RopeMode::kNeox, 128, 10000.0}));

TEST(Rope, ModesDiffer) {
  const int64_t hd = 64;
  const model::RopeTable table(hd, 8, 10000.0);
  const auto x = random_vector(hd, 5);
  std::vector<float> a = x, b = x;
  rope(a.data(), 1, hd, table.cos(5), table.sin(5), model::RopeMode::kNorm);
  rope(b.data(), 1, hd, table.cos(5), table.sin(5), model::RopeMode::kNeox);
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < hd; ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += x[i] * x[i];
  }
  EXPECT_GT(std::sqrt(diff / norm), 0.5);
  // The NEOX result is the normal one with each head's dimensions permuted (2i, 2i+1) -> (i, i + hd/2).
  std::vector<float> xp(hd), bp(hd);
  for (int64_t i = 0; i < hd / 2; ++i) {
    xp[2 * i] = x[i];
    xp[2 * i + 1] = x[i + hd / 2];
  }
  rope(xp.data(), 1, hd, table.cos(5), table.sin(5), model::RopeMode::kNorm);
  for (int64_t i = 0; i < hd / 2; ++i) {
    EXPECT_EQ(xp[2 * i], b[i]);
    EXPECT_EQ(xp[2 * i + 1], b[i + hd / 2]);
  }
}

TEST(Rope, PartialRotatesTheFirstNRotDims) {
  // llama.cpp's partial RoPE (n_rot < head_dim, LLaDA2: 64 of 128): pairs as the mode says within the
  // first n_rot dims, angles pos * base^(-2i / n_rot), the other dims unchanged. The reference is the
  // complex rotation over a head of n_rot dims (rope_f64) with the rest copied.
  const int64_t hd = 128, n_rot = 64, n_heads = 2;
  const model::RopeTable table(n_rot, 40, 600000.0);
  for (const model::RopeMode mode : {model::RopeMode::kNorm, model::RopeMode::kNeox}) {
    for (const int64_t pos : {0, 3, 39}) {
      const auto x = random_vector(n_heads * hd, 300 + pos);
      std::vector<float> y = x;
      rope(y.data(), n_heads, hd, table.cos(pos), table.sin(pos), mode, n_rot);
      for (int64_t h = 0; h < n_heads; ++h) {
        const std::vector<float> head(x.begin() + h * hd, x.begin() + h * hd + n_rot);
        const auto ref = rope_f64(head, 1, n_rot, pos, 600000.0, mode == model::RopeMode::kNorm);
        for (int64_t i = 0; i < n_rot; ++i)
          EXPECT_NEAR(y[h * hd + i], ref[i], 2e-6) << "pos " << pos << " i " << i;
        for (int64_t i = n_rot; i < hd; ++i)
          EXPECT_EQ(y[h * hd + i], x[h * hd + i]) << "pos " << pos << " i " << i;
      }
    }
  }
}

/// softmax(q k^T * scale) v per head in f64, query head h reading kv head h / (n_head / n_head_kv).
std::vector<double> attention_f64(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t n, int64_t n_head, int64_t n_head_kv,
                                  int64_t hd) {
  std::vector<double> out(n * n_head * hd, 0.0);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (int64_t h = 0; h < n_head; ++h) {
    const int64_t kvh = h / (n_head / n_head_kv);
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> s(n);
      double mx = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < hd; ++d)
          dot += double(q[(i * n_head + h) * hd + d]) * k[(j * n_head_kv + kvh) * hd + d];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t d = 0; d < hd; ++d)
          out[(i * n_head + h) * hd + d] += s[j] / sum * v[(j * n_head_kv + kvh) * hd + d];
      }
    }
  }
  return out;
}

struct AttentionCase {
  int64_t n, n_head, n_head_kv, hd;
  int n_threads;
};

void PrintTo(const AttentionCase& c, std::ostream* os) {
  *os << "n=" << c.n << " heads=" << c.n_head << "/" << c.n_head_kv << " hd=" << c.hd
      << " threads=" << c.n_threads;
}

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesF64Softmax) {
  const AttentionCase ac = GetParam();
  const auto q = random_vector(ac.n * ac.n_head * ac.hd, 11, 2.0f);
  const auto k = random_vector(ac.n * ac.n_head_kv * ac.hd, 12, 2.0f);
  const auto v = random_vector(ac.n * ac.n_head_kv * ac.hd, 13);
  std::vector<float> out(q.size()), scratch(ac.n_threads * (ac.n + 3));
  attention(q.data(), k.data(), v.data(), ac.n, ac.n_head, ac.n_head_kv, ac.hd,
            1.0f / std::sqrt(float(ac.hd)), out.data(), scratch.data(), ac.n + 3, ac.n_threads);
  const auto ref = attention_f64(q, k, v, ac.n, ac.n_head, ac.n_head_kv, ac.hd);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 2e-5) << "i=" << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(AttentionCase{1, 2, 2, 8, 1},      // one token: out = v
                                           AttentionCase{9, 4, 4, 64, 2},     // MHA (LLaDA)
                                           AttentionCase{13, 4, 2, 64, 2},    // GQA 2:1 (tiny Dream)
                                           AttentionCase{7, 28, 4, 128, 3},   // GQA 7:1 (Dream-7B)
                                           AttentionCase{33, 8, 1, 16, 2}));  // MQA

TEST(Attention, IsBidirectional) {
  // Changing the last token's key and value must change the first token's output (no causal mask).
  const int64_t n = 5, hd = 16;
  auto q = random_vector(n * hd, 21), k = random_vector(n * hd, 22), v = random_vector(n * hd, 23);
  std::vector<float> a(n * hd), b(n * hd), scratch(n);
  attention(q.data(), k.data(), v.data(), n, 1, 1, hd, 0.25f, a.data(), scratch.data(), n, 1);
  for (int64_t d = 0; d < hd; ++d) v[(n - 1) * hd + d] += 1.0f;
  attention(q.data(), k.data(), v.data(), n, 1, 1, hd, 0.25f, b.data(), scratch.data(), n, 1);
  EXPECT_NE(a[0], b[0]);
}

TEST(SiluMul, MatchesFormula) {
  const auto g = random_vector(100, 31, 4.0f), u = random_vector(100, 32);
  std::vector<float> out(100);
  silu_mul(g.data(), u.data(), out.data(), 100);
  for (int i = 0; i < 100; ++i) {
    const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    EXPECT_NEAR(out[i], ref, 1e-6 * std::abs(ref) + 1e-7);
  }
}

TEST(Argmax, FirstOfTies) {
  const std::vector<float> x = {1, 3, 2, 3};
  EXPECT_EQ(argmax(x.data(), 4), 1);
}

}  // namespace
}  // namespace dllm::cpu
