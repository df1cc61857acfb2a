// The packed Q4_K / Q6_K GEMM (src/cpu/qgemm_*, make_matrix) on every ISA path this CPU supports.
//
// Oracle: an f64 GEMM over the weights as quant::dequantize_row decodes them (the quant library's
// decoder, not the repacking code) and the Q8_K activations as d * qs. The kernels compute exact int32
// sums per sub-block, so they differ from that only by f32 rounding of a few products per super-block
// and of the sum over super-blocks; the bound below is written from that count, and two controls
// justify it: the reference matrices (make_matrix_ref, ggml's generic dot order) stay inside it, and a
// weight moved by one quantization step falls outside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/dispatch.h"
#include "cpu/matmul.h"
#include "cpu/qgemm.h"
#include "quant/quant.h"

namespace dllm::cpu {
namespace {

using gguf::GgmlType;
constexpr double kU = 1.0 / (1 << 24);  // f32 unit roundoff

// ---------------------------------------------------------------------------------------------------
// Random weights, encoded into GGUF blocks by an encoder written here from ggml's block layouts, with
// the integer pieces (d, sc, q, dmin, m) kept so the error bound can be computed from them.

struct Weights {
  GgmlType type;
  int64_t n_out = 0, n_in = 0;
  std::vector<uint8_t> bytes;  // GGUF blocks, row-major
  std::vector<double> pieces;  // n_out x n_in: |d sc q| + |dmin m| (Q4_K) or |d sc (q - 32)| (Q6_K)
  std::vector<double> exact;   // n_out x n_in: d sc q - dmin m or d sc (q - 32), in f64
  gguf::TensorInfo info() const {
    gguf::TensorInfo t;
    t.name = type == GgmlType::Q4_K ? "blk.0.ffn_up.weight" : "blk.0.ffn_down.weight";
    t.n_dims = 2;
    t.ne[0] = n_in;
    t.ne[1] = n_out;
    t.type = type;
    t.n_bytes = bytes.size();
    return t;
  }
};

// Row magnitudes cycle through 1..7 so a row or scale index mix-up changes results visibly.
float row_magnitude(int64_t row) {
  return float(1 + (row * 5) % 7);
}

Weights random_q4_K(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u6(1, 63), u4(0, 15);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q4_K, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 256;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q4_K));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q4_K*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q4_K& blk = blocks[o * nb + b];
      const uint16_t d16 = quant::fp32_to_fp16(1e-3f * row_magnitude(o) * ud(rng));
      const uint16_t dmin16 = quant::fp32_to_fp16(2e-3f * row_magnitude(o) * ud(rng));
      blk.d = d16;
      blk.dmin = dmin16;
      uint8_t sc[8], m[8], q[256];
      for (int j = 0; j < 8; ++j) {
        sc[j] = uint8_t(u6(rng));  // >= 1, so every weight matters (see the one-step control)
        m[j] = uint8_t(u6(rng) - 1);
      }
      for (int j = 0; j < 4; ++j) {  // ggml get_scale_min_k4, inverted
        blk.scales[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        blk.scales[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        blk.scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
      }
      for (int v = 0; v < 256; ++v) q[v] = uint8_t(u4(rng));
      // Bytes 32c..32c+31 hold values 64c+l (low nibble) and 64c+32+l (high nibble).
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) blk.qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
      }
      const double d = quant::fp16_to_fp32(d16), dmin = quant::fp16_to_fp32(dmin16);
      for (int v = 0; v < 256; ++v) {
        w.pieces[size_t(o * n_in + b * 256 + v)] =
            std::fabs(d * sc[v / 32] * q[v]) + std::fabs(dmin * m[v / 32]);
        w.exact[size_t(o * n_in + b * 256 + v)] = d * sc[v / 32] * q[v] - dmin * m[v / 32];
      }
    }
  }
  return w;
}

Weights random_q6_K(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u6(0, 63), sc_dist(-128, 127);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q6_K, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 256;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q6_K));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q6_K*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q6_K& blk = blocks[o * nb + b];
      const uint16_t d16 = quant::fp32_to_fp16(1e-4f * row_magnitude(o) * ud(rng));
      blk.d = d16;
      uint8_t q[256];
      for (int j = 0; j < 16; ++j) {
        int s = sc_dist(rng);
        if (s == 0) s = 1;  // every weight matters
        blk.scales[j] = int8_t(s);
      }
      for (int v = 0; v < 256; ++v) q[v] = uint8_t(u6(rng));
      // Per 128-value half n: ql[64n + l] = values l | l+64 (nibbles), ql[64n + 32 + l] = l+32 | l+96,
      // qh[32n + l] = top 2 bits of values l, l+32, l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7.
      for (int n = 0; n < 2; ++n) {
        const uint8_t* v = q + 128 * n;
        for (int l = 0; l < 32; ++l) {
          blk.ql[64 * n + l] = uint8_t((v[l] & 15) | ((v[l + 64] & 15) << 4));
          blk.ql[64 * n + 32 + l] = uint8_t((v[l + 32] & 15) | ((v[l + 96] & 15) << 4));
          blk.qh[32 * n + l] = uint8_t((v[l] >> 4) | ((v[l + 32] >> 4) << 2) | ((v[l + 64] >> 4) << 4) |
                                       ((v[l + 96] >> 4) << 6));
        }
      }
      const double d = quant::fp16_to_fp32(d16);
      for (int v = 0; v < 256; ++v) {
        w.exact[size_t(o * n_in + b * 256 + v)] = d * blk.scales[v / 16] * (int(q[v]) - 32);
        w.pieces[size_t(o * n_in + b * 256 + v)] = std::fabs(w.exact[size_t(o * n_in + b * 256 + v)]);
      }
    }
  }
  return w;
}

Weights random_weights(GgmlType type, int64_t n_out, int64_t n_in, uint64_t seed) {
  return type == GgmlType::Q4_K ? random_q4_K(n_out, n_in, seed) : random_q6_K(n_out, n_in, seed);
}

// The weights as the quant library decodes them (f32, as llama.cpp's dequantize_row_* gives them).
std::vector<float> dequantized(const Weights& w) {
  std::vector<float> out(size_t(w.n_out * w.n_in));
  const size_t row_bytes = w.bytes.size() / size_t(w.n_out);
  for (int64_t o = 0; o < w.n_out; ++o) {
    quant::dequantize_row(w.type, w.bytes.data() + size_t(o) * row_bytes, out.data() + o * w.n_in, w.n_in);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Activations: Gaussian rows at per-token scales; every third token is shifted positive (a nonzero
// mean makes the Q4_K min and Q6_K offset terms large), and token 1's second block is all zero (d = 0).

struct Acts {
  int64_t n_tokens = 0, n_in = 0;
  std::vector<float> f32;
  std::vector<quant::block_q8_K> q8k;
  std::vector<double> deq;  // d * qs, the values the kernels really multiply
  Activations view() const { return Activations{f32.data(), q8k.data(), n_tokens, n_in}; }
};

Acts random_acts(int64_t n_tokens, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Acts a;
  a.n_tokens = n_tokens;
  a.n_in = n_in;
  a.f32.resize(size_t(n_tokens * n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float scale = 0.1f * float(1 + t % 5);
    const float shift = t % 3 == 2 ? 2.0f : 0.0f;
    for (int64_t k = 0; k < n_in; ++k) a.f32[size_t(t * n_in + k)] = scale * (nd(rng) + shift);
    if (t == 1 && n_in >= 512) std::fill_n(a.f32.begin() + t * n_in + 256, 256, 0.0f);
  }
  a.q8k.resize(size_t(n_tokens * n_in / 256));
  for (int64_t t = 0; t < n_tokens; ++t) {
    quant::quantize_row_q8_K(a.f32.data() + t * n_in, a.q8k.data() + t * (n_in / 256), n_in);
  }
  a.deq.resize(a.f32.size());
  for (size_t i = 0; i < a.q8k.size(); ++i) {
    for (int k = 0; k < 256; ++k) a.deq[i * 256 + size_t(k)] = double(a.q8k[i].d) * a.q8k[i].qs[k];
  }
  return a;
}

// ---------------------------------------------------------------------------------------------------
// Reference and bound.

struct Reference {
  std::vector<double> y;      // n_tokens x n_out
  std::vector<double> bound;  // n_tokens x n_out
};

// y64 = W x in f64. Bound per output: (n_sb + 8) u sum_k pieces_k |x_k|. Per super-block a kernel
// rounds the int32 -> f32 conversions, the products by d, dmin and d_x and their difference (<= 4u of
// the super-block's pieces); adding n_sb such terms in f32 costs at most (n_sb - 1) u of their sum;
// the f32 weights the reference starts from carry <= 3u of their pieces. n_sb + 8 covers all three.
Reference reference(const Weights& w, const Acts& a) {
  const std::vector<float> wf = dequantized(w);
  const int64_t n_sb = w.n_in / 256;
  Reference r;
  r.y.resize(size_t(a.n_tokens * w.n_out));
  r.bound.resize(r.y.size());
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const double* x = a.deq.data() + t * w.n_in;
    for (int64_t o = 0; o < w.n_out; ++o) {
      const float* wr = wf.data() + o * w.n_in;
      const double* pr = w.pieces.data() + o * w.n_in;
      double s = 0, mag = 0;
      for (int64_t k = 0; k < w.n_in; ++k) {
        s += double(wr[k]) * x[k];
        mag += pr[k] * std::fabs(x[k]);
      }
      r.y[size_t(t * w.n_out + o)] = s;
      r.bound[size_t(t * w.n_out + o)] = double(n_sb + 8) * kU * mag;
    }
  }
  return r;
}

// Largest |y - ref| / bound over all outputs (y row stride ldy); > 1 means outside the bound.
double worst_ratio(const std::vector<float>& y, int64_t ldy, const Reference& ref, int64_t n_tokens,
                   int64_t n_out, std::string* where = nullptr) {
  double worst = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      const double got = y[size_t(t * ldy + o)];
      const double want = ref.y[size_t(t * n_out + o)];
      const double ratio = std::isfinite(got) ? std::fabs(got - want) / ref.bound[size_t(t * n_out + o)]
                                              : std::numeric_limits<double>::infinity();
      if (ratio > worst) {
        worst = ratio;
        if (where) {
          *where = "token " + std::to_string(t) + " row " + std::to_string(o) + ": got " +
                   std::to_string(got) + ", f64 " + std::to_string(want) + ", bound " +
                   std::to_string(ref.bound[size_t(t * n_out + o)]);
        }
      }
    }
  }
  return worst;
}

// All rows through `m` in one call per `chunk` rows (chunk a multiple of 16, or 0 = one call).
std::vector<float> run(const Matrix& m, const Acts& a, int64_t ldy, int64_t chunk = 0) {
  std::vector<float> y(size_t(a.n_tokens * ldy), std::numeric_limits<float>::quiet_NaN());
  const int64_t step = chunk > 0 ? chunk : m.n_out();
  for (int64_t o = 0; o < m.n_out(); o += step)
    m.multiply(a.view(), o, std::min(o + step, m.n_out()), y.data(), ldy);
  return y;
}

// ---------------------------------------------------------------------------------------------------

struct Param {
  Isa isa;
  GgmlType type;
};

std::string param_name(const testing::TestParamInfo<Param>& p) {
  return std::string(isa_name(p.param.isa)) + "_" + (p.param.type == GgmlType::Q4_K ? "Q4_K" : "Q6_K");
}

class QGemm : public testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) {
      GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(GetParam().isa) << " path ("
                   << describe_isa(best_isa()) << ")";
    }
  }
  Isa isa() const { return GetParam().isa; }
  GgmlType type() const { return GetParam().type; }

  // Packs random weights for this ISA, checks them against f64 on `n_tokens` tokens (row ranges of
  // `chunk` rows per call, output row stride n_out + pad) and against make_matrix_ref.
  void check(int64_t n_out, int64_t n_in, int64_t n_tokens, int64_t chunk = 0, int64_t pad = 0) {
    SCOPED_TRACE(std::to_string(n_out) + " x " + std::to_string(n_in) + ", " + std::to_string(n_tokens) +
                 " tokens, chunk " + std::to_string(chunk));
    const Weights w = random_weights(type(), n_out, n_in, uint64_t(n_out * 131 + n_in * 7 + n_tokens));
    const Acts a = random_acts(n_tokens, n_in, uint64_t(n_tokens * 17 + n_in));
    const auto m = make_matrix(w.info(), w.bytes.data(), isa());
    ASSERT_TRUE(m->owns_data());
    ASSERT_TRUE(m->wants_q8k());
    ASSERT_EQ(m->n_out(), n_out);
    ASSERT_EQ(m->n_in(), n_in);
    ASSERT_EQ(m->row_granularity() % qgemm::kRows, 0);  // work items hold whole groups
    const int64_t ldy = n_out + pad;
    const std::vector<float> y = run(*m, a, ldy, chunk);
    const Reference ref = reference(w, a);
    std::string where;
    const double worst = worst_ratio(y, ldy, ref, n_tokens, n_out, &where);
    RecordProperty("worst_error_over_bound", std::to_string(worst));
    EXPECT_LE(worst, 1.0) << "worst at " << where;
    // Padding columns of y (rows >= n_out) are never written.
    for (int64_t t = 0; t < n_tokens && pad > 0; ++t) {
      for (int64_t o = n_out; o < ldy; ++o) ASSERT_TRUE(std::isnan(y[size_t(t * ldy + o)])) << t << " " << o;
    }
    // Against the reference matrices: both within the bound of the same f64 value.
    const auto r = make_matrix_ref(w.info(), w.bytes.data());
    const std::vector<float> yr = run(*r, a, ldy);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t o = 0; o < n_out; ++o) {
        const size_t i = size_t(t * ldy + o);
        ASSERT_LE(std::fabs(double(y[i]) - double(yr[i])), 2 * ref.bound[size_t(t * n_out + o)])
            << "token " << t << " row " << o << ": packed " << y[i] << ", make_matrix_ref " << yr[i];
      }
    }
  }
};

TEST_P(QGemm, OneGroupOneToken) {
  check(16, 256, 1);
}

// Every token-tile tail (tiles of 4 tokens: remainders 1, 2, 3) and a row count off the 16-row grid.
TEST_P(QGemm, TokenTails) {
  for (int64_t n_tokens = 1; n_tokens <= 13; ++n_tokens) check(50, 512, n_tokens);
}

// Dream's attn_k (128 x 3584: 14 super-blocks per row), canvas-sized token counts.
TEST_P(QGemm, DreamAttnK) {
  check(128, 3584, 9);
}

TEST_P(QGemm, LLaDASizedRows) {
  check(64, 4096, 141, 32);
}

// The LM head's 50262 rows (not a multiple of 16) with a 16-row granularity split and ldy > n_out.
TEST_P(QGemm, LmHeadRows) {
  check(50262, 256, 3, 16 * 97, 5);
}

TEST_P(QGemm, SixHundredTokens) {
  check(37, 256, 600);
}

// Row ranges split on 16-row boundaries compute the same values, bit for bit, as one call, and
// never write outside their range (the forward pass runs them from several threads).
TEST_P(QGemm, RowRangesAreIndependentAndExact) {
  const Weights w = random_weights(type(), 100, 512, 3);
  const Acts a = random_acts(7, 512, 4);
  const auto m = make_matrix(w.info(), w.bytes.data(), isa());
  const std::vector<float> whole = run(*m, a, 100);
  std::vector<float> part(whole.size(), std::numeric_limits<float>::quiet_NaN());
  m->multiply(a.view(), 32, 80, part.data(), 100);
  for (int64_t t = 0; t < 7; ++t) {
    for (int64_t o = 0; o < 100; ++o) {
      const float v = part[size_t(t * 100 + o)];
      if (o >= 32 && o < 80) {
        ASSERT_EQ(std::memcmp(&v, &whole[size_t(t * 100 + o)], 4), 0) << t << " " << o;
      } else {
        ASSERT_TRUE(std::isnan(v)) << "row " << o << " outside [32, 80) was written";
      }
    }
  }
  std::vector<float> threaded(whole.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t o = 0; o < 100; o += 16)
    m->multiply(a.view(), o, std::min<int64_t>(o + 16, 100), threaded.data(), 100);
  ASSERT_EQ(std::memcmp(threaded.data(), whole.data(), whole.size() * 4), 0);
}

// Control 1 (the bound is not too tight): the reference matrices, whose float order is ggml's,
// stay inside it. Control 2 (the bound is tight enough): one weight moved by one quantization step
// puts that row outside it, so an off-by-one nibble, a missing zero point or a wrong scale would too.
TEST_P(QGemm, BoundControls) {
  const int64_t n_out = 32, n_in = 1024, n_tokens = 6;
  Weights w = random_weights(type(), n_out, n_in, 11);
  const Acts a = random_acts(n_tokens, n_in, 12);
  const Reference ref = reference(w, a);
  const auto r = make_matrix_ref(w.info(), w.bytes.data());
  EXPECT_LE(worst_ratio(run(*r, a, n_out), n_out, ref, n_tokens, n_out), 1.0);
  // Row 5, super-block 2, first byte of its quants: the low nibble / 4 low bits of value 0 change by 1.
  const int64_t nb = n_in / 256;
  if (type() == GgmlType::Q4_K) {
    auto* blk = reinterpret_cast<quant::block_q4_K*>(w.bytes.data()) + 5 * nb + 2;
    blk->qs[0] ^= 1;
  } else {
    auto* blk = reinterpret_cast<quant::block_q6_K*>(w.bytes.data()) + 5 * nb + 2;
    blk->ql[0] ^= 1;
  }
  const auto m = make_matrix(w.info(), w.bytes.data(), isa());
  const std::vector<float> y = run(*m, a, n_out);
  double worst_row5 = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    worst_row5 = std::max(worst_row5, std::fabs(y[size_t(t * n_out + 5)] - ref.y[size_t(t * n_out + 5)]) /
                                          ref.bound[size_t(t * n_out + 5)]);
  }
  EXPECT_GT(worst_row5, 1.0) << "a one-step weight change went unnoticed";
}

INSTANTIATE_TEST_SUITE_P(
    AllPaths, QGemm,
    testing::Values(Param{Isa::kScalar, GgmlType::Q4_K}, Param{Isa::kScalar, GgmlType::Q6_K},
                    Param{Isa::kAvx2, GgmlType::Q4_K}, Param{Isa::kAvx2, GgmlType::Q6_K},
                    Param{Isa::kAvxVnni, GgmlType::Q4_K}, Param{Isa::kAvxVnni, GgmlType::Q6_K},
                    Param{Isa::kAvx512Vnni, GgmlType::Q4_K}, Param{Isa::kAvx512Vnni, GgmlType::Q6_K}),
    param_name);

// The test's own encoder agrees with the quant library's decoder, so `pieces` describes the weights
// the reference multiplies: |decoded - (d sc q - dmin m)| is within f32 rounding (3 roundings) of the
// pieces.
TEST(QGemmGenerator, EncoderMatchesQuantDecoder) {
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    const Weights w = random_weights(type, 3, 512, 5);
    const std::vector<float> f = dequantized(w);
    for (size_t i = 0; i < f.size(); ++i) ASSERT_LE(std::fabs(f[i] - w.exact[i]), 3 * kU * w.pieces[i]) << i;
  }
}

// The packed layouts stay close to the GGUF sizes (the model must fit in about its file size).
TEST(QGemmLayout, PackedSizeNearGgufSize) {
  const double q4 = double(sizeof(qgemm::Q4KBlock)) / (qgemm::kRows * sizeof(quant::block_q4_K));
  const double q6 = double(sizeof(qgemm::Q6KBlock)) / (qgemm::kRows * sizeof(quant::block_q6_K));
  EXPECT_LT(q4, 1.03);  // 4.625 vs 4.5 bits per weight
  EXPECT_LT(q6, 1.01);  // 6.625 vs 6.5625
}

// Types without a packed kernel go to the reference matrices.
TEST(QGemmDispatch, OtherTypesUseReferenceMatrices) {
  std::vector<float> data(256 * 2, 0.5f);
  gguf::TensorInfo t;
  t.name = "blk.0.attn_norm.weight";
  t.n_dims = 2;
  t.ne[0] = 256;
  t.ne[1] = 2;
  t.type = GgmlType::F32;
  const auto m = make_matrix(t, reinterpret_cast<const uint8_t*>(data.data()), best_isa());
  EXPECT_FALSE(m->wants_q8k());
}

}  // namespace
}  // namespace dllm::cpu
