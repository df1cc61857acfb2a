// The row kernels of every path (cpu/kernels/row_kernels.h) against independent references: Q8_K
// quantization byte for byte against quant::quantize_row_q8_K (ggml's quantize_row_q8_K_ref
// arithmetic), SiLU * up against the f64 formula, one attention head against an f64 softmax(q k^T) v
// written here. Paths this CPU cannot run are skipped with the reason.
#include "cpu/kernels/row_kernels.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/isa.h"
#include "cpu/ops.h"
#include "forward/mask.h"
#include "quant/quant.h"

namespace dllm::cpu {
namespace {

using dllm::test::random_vector;

class RowKernelsIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU cannot run " << isa_name(GetParam());
  }
  const RowKernels& k() const { return row_kernels(GetParam()); }
};

// --- Q8_K -------------------------------------------------------------------------------------------

void expect_same_q8_K(const std::vector<float>& x, const RowKernels& k, const std::string& what) {
  const int64_t nb = static_cast<int64_t>(x.size()) / quant::kQK_K;
  std::vector<quant::block_q8_K> want(nb), got(nb);
  quant::quantize_row_q8_K(x.data(), want.data(), static_cast<int64_t>(x.size()));
  k.quantize_q8_K(x.data(), got.data(), static_cast<int64_t>(x.size()));
  for (int64_t b = 0; b < nb; ++b) {
    EXPECT_EQ(std::memcmp(&want[b].d, &got[b].d, sizeof(float)), 0)
        << what << " block " << b << ": d " << want[b].d << " vs " << got[b].d;
    for (int i = 0; i < quant::kQK_K; ++i) {
      ASSERT_EQ(want[b].qs[i], got[b].qs[i])
          << what << " block " << b << " value " << i << " x=" << x[b * 256 + i];
    }
    for (int g = 0; g < quant::kQK_K / 16; ++g)
      ASSERT_EQ(want[b].bsums[g], got[b].bsums[g]) << what << " block " << b << " bsum " << g;
  }
}

TEST_P(RowKernelsIsa, QuantizeQ8KMatchesReferenceBitForBit) {
  // Random rows of several scales, one all-zero block, blocks whose largest magnitude is negative or
  // positive and repeated with both signs (the first one sets the sign), and exact rounding ties.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto x = random_vector(4096, seed, seed % 2 ? 0.02f : 30.0f);
    if (seed % 3 == 0) x[seed * 7] += 3e3f;  // an outlier
    expect_same_q8_K(x, k(), "random seed " + std::to_string(seed));
  }
  std::vector<float> x(6 * 256, 0.0f);
  for (int i = 0; i < 256; ++i) {
    x[256 + i] = static_cast<float>(i % 17) - 8.0f;  // max |x| 8, first at i = 0 with sign -
    x[512 + i] = 8.0f - static_cast<float>(i % 17);  // first of largest magnitude is +8
    x[768 + i] = (i % 2 ? 0.5f : -0.5f) * static_cast<float>(i % 5);
    x[1024 + i] = static_cast<float>(i) - 127.0f;  // iscale 1: ties nowhere, every value exact
    x[1280 + i] = (static_cast<float>(i) - 128.0f) * 0.5f;
  }
  x[1024 + 255] = -127.0f;  // largest magnitude -127, at i = 0 and i = 255: iscale 1
  x[1280] = 127.0f;         // iscale -1: every other value of that block is a rounding tie (k + 0.5)
  expect_same_q8_K(x, k(), "constructed blocks");
}

// --- SiLU * up ------------------------------------------------------------------------------------

TEST_P(RowKernelsIsa, SiluMulMatchesF64) {
  const int64_t n = 12288 + 5;  // a tail past the last full vector
  auto g = random_vector(n, 3, 4.0f);
  const auto u = random_vector(n, 4, 2.0f);
  // The extremes: exp clamps above 88 and flushes below ln(FLT_MIN).
  const float edges[] = {-120.0f, -89.0f, -88.0f, -87.0f, -30.0f, -1e-6f,
                         0.0f,    1e-6f,  30.0f,  87.0f,  88.5f,  100.0f};
  for (size_t i = 0; i < std::size(edges); ++i) g[100 + i] = edges[i];
  std::vector<float> out(n);
  k().silu_mul(g.data(), u.data(), out.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double ref = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * u[i];
    // A few f32 roundings (exp, add, divide, multiply): 8 units of 2^-24 relative.
    // Below 1e-30 (g < -69) only the magnitude matters: the scalar path itself flushes g = -89 to -0.
    EXPECT_NEAR(out[i], ref, 8 * 0x1p-24 * std::abs(ref) + 1e-30) << "g=" << g[i] << " u=" << u[i];
  }
}

// --- Softmax rounded to f16 -----------------------------------------------------------------------

TEST_P(RowKernelsIsa, SoftmaxF16MatchesF64) {
  for (const int64_t n : {1, 15, 4096 + 7, 262144 + 3}) {
    const float scale = 1.25f;
    auto x = random_vector(n, 40 + n, 6.0f);
    if (n > 100) x[n / 3] = 40.0f;  // one dominant logit: most probabilities become f16 subnormals or 0
    std::vector<float> y(n);
    k().softmax_f16(x.data(), scale, y.data(), n);
    double m = -INFINITY, z = 0;
    for (const float v : x) m = std::max(m, double(v * scale));
    for (const float v : x) z += std::exp(double(v * scale) - m);
    for (int64_t i = 0; i < n; ++i) {
      const double p = std::exp(double(x[i] * scale) - m) / z;
      // f16 keeps 11 significant bits (half an ulp: 2^-11 relative) down to 2^-14, then steps of 2^-24;
      // the exp, the sum and 1 / sum add a few 2^-24 before that rounding.
      const double tol = std::max(p * (0x1p-11 + 8 * 0x1p-24), 0x1p-25 + 1e-12);
      EXPECT_NEAR(y[i], p, tol) << "n " << n << " id " << i;
      EXPECT_EQ(y[i], quant::fp16_to_fp32(quant::fp32_to_fp16(y[i]))) << "not an f16 value: id " << i;
    }
  }
}

// --- Final logit softcap --------------------------------------------------------------------------

TEST_P(RowKernelsIsa, SoftcapMatchesF64) {
  const float cap = 30.0f;
  auto x = random_vector(8192 + 3, 50, 40.0f);
  // Both sides of the |x / cap| = 0.5 switch, tiny values, signed zeros and saturation.
  const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-20f, 14.99f, 15.0f, 15.01f, -15.0f, 3000.0f, -3e6f, 1e30f};
  for (size_t i = 0; i < std::size(edges); ++i) x[7 + i] = edges[i];
  x[40] = NAN;
  auto y = x;
  k().softcap(y.data(), static_cast<int64_t>(y.size()), cap);
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::tanh(double(x[i] * (1.0f / cap))) * cap;  // the scaled input as f32, as ggml
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
      continue;
    }
    // tanh within a few 2^-24 (exp, divide, subtract), then one f32 multiply.
    EXPECT_NEAR(y[i], ref, 6 * 0x1p-24 * std::abs(ref) + 1e-37) << "x=" << x[i];
    EXPECT_EQ(std::signbit(y[i]), std::signbit(ref)) << "x=" << x[i];
  }
}

// --- GELU * up (DiffusionGemma's FFNs) ------------------------------------------------------------

// Every path is the scalar definition bit for bit (gelu_f16, itself checked against the f64 tanh
// formula in moe_test), on random gates across the clamps and on the edges: each side of -10 and 10,
// f16 rounding ties (1 + 2^-11 rounds to 1, 1 + 3 * 2^-11 to 1 + 2^-9), f16 subnormals, signed zeros,
// infinities; NaN stays NaN.
TEST_P(RowKernelsIsa, GeluMulIsTheF16TableDefinitionBitForBit) {
  std::vector<float> gate = random_vector(4096 + 5, 60, 12.0f);
  const std::vector<float> up = random_vector(gate.size(), 61, 2.0f);
  const float edges[] = {-10.0f,
                         std::nextafter(-10.0f, 0.0f),
                         std::nextafter(-10.0f, -20.0f),
                         10.0f,
                         std::nextafter(10.0f, 0.0f),
                         1.0f + 0x1p-11f,
                         1.0f + 3 * 0x1p-11f,
                         -(1.0f + 0x1p-11f),
                         0x1p-24f,
                         0x1.8p-25f,
                         0.0f,
                         -0.0f,
                         INFINITY,
                         -INFINITY,
                         65520.0f,
                         -7.5f};
  for (size_t i = 0; i < std::size(edges); ++i) gate[3 + i] = edges[i];
  gate[40] = NAN;
  std::vector<float> got(gate.size());
  k().gelu_mul(gate.data(), up.data(), got.data(), static_cast<int64_t>(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    const float want = gelu_f16(gate[i]) * up[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "gate=" << gate[i];
      continue;
    }
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want))
        << "gate=" << gate[i] << " up=" << up[i] << ": " << got[i] << " vs " << want;
  }
  // In place (out aliasing gate), as the forward pass calls it.
  std::vector<float> in_place = gate;
  k().gelu_mul(in_place.data(), up.data(), in_place.data(), static_cast<int64_t>(gate.size()));
  EXPECT_EQ(std::memcmp(in_place.data(), got.data(), got.size() * sizeof(float)), 0);
}

// --- Q6_K decoding --------------------------------------------------------------------------------

TEST_P(RowKernelsIsa, DequantizeQ6KMatchesTheBlockLayoutBitForBit) {
  // Random bytes for ql, qh and the scales (every bit pattern reachable), random f16 d.
  std::mt19937 rng(7);
  const int64_t nb = 11;  // DiffusionGemma's 2816 / 256
  std::vector<quant::block_q6_K> b(nb);
  for (auto& blk : b) {
    auto* bytes = reinterpret_cast<uint8_t*>(&blk);
    for (size_t i = 0; i < sizeof blk; ++i) bytes[i] = static_cast<uint8_t>(rng());
    blk.d = quant::fp32_to_fp16(std::uniform_real_distribution<float>(-0.05f, 0.05f)(rng));
  }
  std::vector<float> got(nb * quant::kQK_K);
  k().dequantize_q6_K(b.data(), got.data(), nb * quant::kQK_K);
  // ggml-common.h block_q6_K: in half h, value 32g + l (l < 32) has the low nibble of ql[64h + l + 32(g & 1)]
  // (the high nibble when g >= 2) and bits 2g..2g+1 of qh[32h + l] on top; x = d * scales[j] * (q - 32).
  for (int64_t i = 0; i < nb; ++i)
    for (int e = 0; e < quant::kQK_K; ++e) {
      const int h = e / 128, g = (e % 128) / 32, l = e % 32;
      const uint8_t ql = b[i].ql[64 * h + l + 32 * (g & 1)];
      const int q = ((g >= 2 ? ql >> 4 : ql & 15) | (((b[i].qh[32 * h + l] >> (2 * g)) & 3) << 4)) - 32;
      const float want =
          quant::fp16_to_fp32(b[i].d) * static_cast<float>(b[i].scales[e / 16]) * static_cast<float>(q);
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i * quant::kQK_K + e]), std::bit_cast<uint32_t>(want))
          << "block " << i << " value " << e;
    }
}

// --- RMSNorm -------------------------------------------------------------------------------------

TEST_P(RowKernelsIsa, RmsNormMatchesF64) {
  for (const int64_t n : {1, 7, 256, 4096, 4096 + 13}) {
    const auto x = random_vector(n, 30 + n, 3.0f);
    const auto w = random_vector(n, 31 + n);
    const float eps = 1e-5f;
    std::vector<float> y(n);
    k().rmsnorm(x.data(), w.data(), y.data(), n, eps);
    double ss = 0;
    for (const float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      // mean rounded to f32, 1/sqrt, two products: a few units of 2^-24.
      const double ref = x[i] * inv * w[i];
      EXPECT_NEAR(y[i], ref, 6 * 0x1p-24 * std::abs(ref) + 1e-30) << "n=" << n << " i=" << i;
    }
  }
}

// --- attention ------------------------------------------------------------------------------------

struct HeadCase {
  int64_t n_q, n_kv, hd, kv_stride;
  float qk_scale;
};

/// softmax(scale q_t . k_j) v in f64, sum_j p_j |v_j[d]| per output, and the largest
/// scale * sum_d |q_d k_jd| (what bounds the rounding error of a score).
/// Only the keys [r.begin, r.end) take part (a masked row); the others get no weight.
void attention_f64(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                   const HeadCase& c, float scale, int64_t t, std::vector<double>& out,
                   std::vector<double>& mag, double& score_abs, forward::KeyRange r) {
  std::vector<double> s(c.n_kv, -INFINITY);
  double mx = -INFINITY;
  score_abs = 0;
  for (int64_t j = r.begin; j < r.end; ++j) {
    double dot = 0, dot_abs = 0;
    for (int64_t d = 0; d < c.hd; ++d) {
      dot += double(q[t * c.hd + d]) * k[j * c.kv_stride + d];
      dot_abs += std::abs(double(q[t * c.hd + d]) * k[j * c.kv_stride + d]);
    }
    s[j] = dot * scale;
    score_abs = std::max(score_abs, dot_abs * scale);
    mx = std::max(mx, s[j]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - mx));
  out.assign(c.hd, 0.0);
  mag.assign(c.hd, 0.0);
  for (int64_t j = r.begin; j < r.end; ++j) {
    for (int64_t d = 0; d < c.hd; ++d) {
      out[d] += s[j] / sum * v[j * c.kv_stride + d];
      mag[d] += s[j] / sum * std::abs(v[j * c.kv_stride + d]);
    }
  }
}

/// Max over outputs of |ours - f64| / bound: at most 1 passes. The bound is the worst case of f32
/// arithmetic in any summation order (u = 2^-24): a score summed over hd products is off by at most
/// (hd + 2) u scale sum_d |q_d k_jd| (absolute), which moves every softmax weight by a relative
/// factor of at most twice that; exp, the normalization and the weighted sum of n_kv values add
/// (n_kv + 10) u relative (n_kv: the keys of the row's range). Both act on sum_j p_j |v_j[d]|.
/// ranges (n_q of them): each row's keys (a mask); nullptr: every key.
double worst_ratio(const RowKernels& kern, const HeadCase& c, uint32_t seed,
                   std::vector<float>* out_keep = nullptr,
                   const std::vector<forward::KeyRange>* ranges = nullptr) {
  const auto q = random_vector(c.n_q * c.hd, seed, c.qk_scale);
  const auto k = random_vector(c.n_kv * c.kv_stride, seed + 1, c.qk_scale);
  const auto v = random_vector(c.n_kv * c.kv_stride, seed + 2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
  std::vector<float> out(c.n_q * c.hd, NAN), scratch(attention_scratch_floats(c.hd, c.n_kv));
  AttentionHead a;
  a.q = q.data();
  a.q_stride = c.hd;
  a.n_q = c.n_q;
  a.k = k.data();
  a.v = v.data();
  a.kv_stride = c.kv_stride;
  a.n_kv = c.n_kv;
  a.ranges = ranges ? ranges->data() : nullptr;
  a.head_dim = c.hd;
  a.scale = scale;
  a.out = out.data();
  a.out_stride = c.hd;
  a.scratch = scratch.data();
  kern.attention_head(a);
  double worst = 0;
  std::vector<double> ref, mag;
  const double u = 0x1p-24;
  for (int64_t t = 0; t < c.n_q; ++t) {
    double score_abs = 0;
    const forward::KeyRange r = ranges ? (*ranges)[t] : forward::KeyRange{0, static_cast<int32_t>(c.n_kv)};
    attention_f64(q, k, v, c, scale, t, ref, mag, score_abs, r);
    const double rel = 2 * (c.hd + 2) * u * score_abs + (r.end - r.begin + 10) * u;
    for (int64_t d = 0; d < c.hd; ++d) {
      const double r = std::abs(out[t * c.hd + d] - ref[d]) / (rel * mag[d] + 1e-30);
      worst = std::max(worst, std::isnan(r) ? INFINITY : r);
    }
  }
  if (out_keep) *out_keep = out;
  return worst;
}

const HeadCase kCases[] = {
    {1, 1, 128, 128, 1.0f},    {3, 7, 64, 256, 1.0f},  {5, 17, 128, 4096, 1.0f}, {141, 141, 128, 4096, 1.0f},
    {20, 141, 128, 512, 3.0f}, {9, 300, 64, 64, 2.0f}, {4, 33, 40, 40, 1.0f},  // 40: not whole vectors
};

TEST_P(RowKernelsIsa, AttentionHeadMatchesF64) {
  uint32_t seed = 10;
  for (const HeadCase& c : kCases) {
    const double w = worst_ratio(k(), c, seed += 3);
    EXPECT_LE(w, 1.0) << "n_q " << c.n_q << " n_kv " << c.n_kv << " hd " << c.hd;
    std::printf("  %s n_q %lld n_kv %lld hd %lld: worst error %.3f of the bound\n", isa_name(GetParam()),
                (long long)c.n_q, (long long)c.n_kv, (long long)c.hd, w);
  }
}

TEST_P(RowKernelsIsa, AttentionRowsDoNotDependOnTheOtherQueries) {
  // A window of query rows (any start, any count) gives the same bits as those rows of a full pass:
  // a window step over a K/V state relies on it.
  const HeadCase full{141, 141, 128, 4096, 1.0f};
  std::vector<float> all;
  worst_ratio(k(), full, 77, &all);
  const auto q = random_vector(full.n_q * full.hd, 77, 1.0f);
  const auto kk = random_vector(full.n_kv * full.kv_stride, 78, 1.0f);
  const auto v = random_vector(full.n_kv * full.kv_stride, 79);
  for (const auto& [begin, count] : {std::pair<int64_t, int64_t>{0, 1}, {37, 5}, {130, 11}, {2, 64}}) {
    std::vector<float> out(count * full.hd), scratch(attention_scratch_floats(full.hd, full.n_kv));
    AttentionHead a;
    a.q = q.data() + begin * full.hd;
    a.q_stride = full.hd;
    a.n_q = count;
    a.k = kk.data();
    a.v = v.data();
    a.kv_stride = full.kv_stride;
    a.n_kv = full.n_kv;
    a.head_dim = full.hd;
    a.scale = 1.0f / std::sqrt(128.0f);
    a.out = out.data();
    a.out_stride = full.hd;
    a.scratch = scratch.data();
    k().attention_head(a);
    EXPECT_EQ(std::memcmp(out.data(), all.data() + begin * full.hd, out.size() * sizeof(float)), 0)
        << "rows " << begin << ".." << begin + count;
  }
}

/// A masked head: query rows at positions first .. first + n_q - 1 of a sequence of n_kv keys, each
/// with the keys `rule` (and a sliding window) gives it.
struct MaskCase {
  HeadCase head;
  forward::MaskRule rule;
  int64_t first = 0;
  int64_t window = 0;
};

std::vector<forward::KeyRange> mask_ranges(const MaskCase& m) {
  std::vector<forward::KeyRange> r;
  for (int64_t t = 0; t < m.head.n_q; ++t)
    r.push_back(forward::key_range(m.rule, m.first + t, m.head.n_kv, m.window));
  return r;
}

const MaskCase kMaskCases[] = {
    // A 13-token prompt, blocks of 8: the step that forwards the prompt's tail (8..12, in the block
    // [8, 16) with the first generated positions 13..15) and the blocks after it, 32 keys.
    {{24, 32, 128, 128, 1.0f}, forward::MaskRule::block_causal(8), 8},
    {{45, 45, 64, 64, 1.0f}, forward::MaskRule::causal(), 0},
    {{45, 45, 128, 256, 2.0f}, forward::MaskRule::causal_prompt(13), 0, 5},  // sliding window of 5
    {{141, 141, 128, 4096, 1.0f}, forward::MaskRule::block_causal(32), 0},
    {{30, 141, 128, 512, 1.0f}, forward::MaskRule::block_causal(16), 100, 7},
    {{33, 33, 40, 40, 1.0f}, forward::MaskRule::causal_prompt(9), 0},  // 40: not whole vectors
};

TEST_P(RowKernelsIsa, MaskedAttentionMatchesF64) {
  uint32_t seed = 200;
  for (const MaskCase& m : kMaskCases) {
    const auto ranges = mask_ranges(m);
    const double w = worst_ratio(k(), m.head, seed += 3, nullptr, &ranges);
    EXPECT_LE(w, 1.0) << forward::describe(m.rule) << " window " << m.window << " n_q " << m.head.n_q;
    std::printf("  %s %s, window %lld, n_q %lld n_kv %lld hd %lld: worst error %.3f of the bound\n",
                isa_name(GetParam()), forward::describe(m.rule).c_str(), (long long)m.window,
                (long long)m.head.n_q, (long long)m.head.n_kv, (long long)m.head.hd, w);
  }
}

TEST_P(RowKernelsIsa, MaskedRowsDoNotDependOnTheirTile) {
  // Each masked row computed alone (one query, its own range) gives the bits it has among the others,
  // and a row whose range is every key gives the unmasked row's bits.
  for (const MaskCase& m : kMaskCases) {
    const HeadCase& c = m.head;
    const auto ranges = mask_ranges(m);
    std::vector<float> all, unmasked;
    worst_ratio(k(), c, 31, &all, &ranges);
    worst_ratio(k(), c, 31, &unmasked);
    const auto q = random_vector(c.n_q * c.hd, 31, c.qk_scale);
    const auto kk = random_vector(c.n_kv * c.kv_stride, 32, c.qk_scale);
    const auto v = random_vector(c.n_kv * c.kv_stride, 33);
    for (int64_t t = 0; t < c.n_q; ++t) {
      std::vector<float> out(c.hd), scratch(attention_scratch_floats(c.hd, c.n_kv));
      AttentionHead a;
      a.q = q.data() + t * c.hd;
      a.q_stride = c.hd;
      a.n_q = 1;
      a.k = kk.data();
      a.v = v.data();
      a.kv_stride = c.kv_stride;
      a.n_kv = c.n_kv;
      a.ranges = &ranges[t];
      a.head_dim = c.hd;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
      a.out = out.data();
      a.out_stride = c.hd;
      a.scratch = scratch.data();
      k().attention_head(a);
      ASSERT_EQ(std::memcmp(out.data(), all.data() + t * c.hd, out.size() * sizeof(float)), 0)
          << forward::describe(m.rule) << " row " << t;
      if (ranges[t].begin == 0 && ranges[t].end == c.n_kv) {
        ASSERT_EQ(std::memcmp(out.data(), unmasked.data() + t * c.hd, out.size() * sizeof(float)), 0)
            << forward::describe(m.rule) << " row " << t << " (every key)";
      }
    }
  }
}

TEST_P(RowKernelsIsa, QueryHeadsOfAGroupReuseTheKeysWithTheSameBits) {
  // GQA: a second query head over the same keys (masked and not) with keys_in_scratch, after the
  // first on the same scratch, gives the bits of a call on a fresh scratch; a call on another
  // group's keys in between would not share them (the forward pass sets the flag per group).
  for (const MaskCase& m : {kMaskCases[0], kMaskCases[4], MaskCase{{20, 141, 128, 512, 3.0f}, {}, 0}}) {
    const HeadCase& c = m.head;
    const std::vector<forward::KeyRange> ranges = mask_ranges(m);
    const bool masked = m.rule.kind != forward::MaskRule::Kind::kFull;
    const auto q1 = random_vector(c.n_q * c.hd, 51, c.qk_scale),
               q2 = random_vector(c.n_q * c.hd, 52, c.qk_scale);
    const auto kk = random_vector(c.n_kv * c.kv_stride, 53, c.qk_scale);
    const auto v = random_vector(c.n_kv * c.kv_stride, 54);
    auto head = [&](const std::vector<float>& q, float* out, float* scratch, bool reuse) {
      AttentionHead a;
      a.q = q.data();
      a.q_stride = c.hd;
      a.n_q = c.n_q;
      a.k = kk.data();
      a.v = v.data();
      a.kv_stride = c.kv_stride;
      a.n_kv = c.n_kv;
      a.ranges = masked ? ranges.data() : nullptr;
      a.head_dim = c.hd;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
      a.out = out;
      a.out_stride = c.hd;
      a.scratch = scratch;
      a.keys_in_scratch = reuse;
      k().attention_head(a);
    };
    std::vector<float> fresh(c.n_q * c.hd), first(c.n_q * c.hd), second(c.n_q * c.hd);
    std::vector<float> s1(attention_scratch_floats(c.hd, c.n_kv)), s2(s1.size());
    head(q2, fresh.data(), s1.data(), false);
    head(q1, first.data(), s2.data(), false);
    head(q2, second.data(), s2.data(), true);
    EXPECT_EQ(std::memcmp(fresh.data(), second.data(), fresh.size() * sizeof(float)), 0)
        << forward::describe(m.rule) << " n_kv " << c.n_kv;
  }
}

TEST(RowKernels, AttentionBoundHasTeeth) {
  // The bound of AttentionHeadMatchesF64 is not loose: a score scale off by 1e-3 (relative) fails it.
  // (qk scale 3: scores up to ~30, so the skew moves them by ~0.03, the bound allows ~1e-3.)
  const RowKernels& scalar = row_kernels(Isa::kScalar);
  const HeadCase c{9, 141, 128, 128, 3.0f};
  EXPECT_LE(worst_ratio(scalar, c, 5), 1.0);
  const RowKernels skewed = {scalar.quantize_q8_K, scalar.silu_mul,
                             [](const AttentionHead& a) {
                               AttentionHead b = a;
                               b.scale *= 1.001f;
                               row_kernels(Isa::kScalar).attention_head(b);
                             },
                             scalar.rmsnorm};
  EXPECT_GT(worst_ratio(skewed, c, 5), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Paths, RowKernelsIsa,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

}  // namespace
}  // namespace dllm::cpu
