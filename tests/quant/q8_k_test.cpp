// Q8_K activation quantization against the formula evaluated in f64, and the Q4_K / Q5_K / Q6_K x Q8_K
// dot products against an f64 dot of the weights (decoded by the test's own bit decoder) with the
// dequantized Q8_K row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "quant/ref_decoders.h"

namespace {

using namespace dllm::quant;
using testref::Mutation;

/// Round half to even in f64, from the definition (floor, then compare the fraction with 1/2).
double round_half_even(double t) {
  const double fl = std::floor(t);
  const double frac = t - fl;
  if (frac > 0.5) return fl + 1;
  if (frac < 0.5) return fl;
  return std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1;
}

/// One Q8_K block as the formula of ggml's quantize_row_q8_K_ref defines it: max = the value of
/// largest |x| (first one on ties) with its sign; iscale = f32(-127 / max); q = round-half-even of
/// the f32 product iscale * x, clamped to 127; d = f32(1 / iscale); bsums[j] = sum of q[16j..16j+15].
/// (A correctly rounded f64 quotient or product of f32 operands, converted to f32, is the f32
/// result: the f64 product of two f32 is exact, and double rounding of a quotient from 53 to 24
/// bits is innocuous.)
struct RefQ8K {
  float d = 0;
  int q[256] = {};
  int bsums[16] = {};
};
RefQ8K ref_q8_K(const float* x, bool half_away_from_zero = false, bool use_abs_max = false) {
  RefQ8K r;
  int imax = -1;
  double amax = 0;
  for (int j = 0; j < 256; ++j)
    if (std::fabs(static_cast<double>(x[j])) > amax) amax = std::fabs(static_cast<double>(x[j])), imax = j;
  if (imax < 0) return r;  // all zero: d = 0, q = 0, bsums = 0
  const double max = use_abs_max ? amax : static_cast<double>(x[imax]);
  const float iscale = static_cast<float>(-127.0 / max);
  for (int j = 0; j < 256; ++j) {
    const double t = static_cast<double>(static_cast<float>(static_cast<double>(iscale) * x[j]));
    const double v = half_away_from_zero ? std::round(t) : round_half_even(t);
    r.q[j] = static_cast<int>(std::min(v, 127.0));
  }
  for (int j = 0; j < 256; ++j) r.bsums[j / 16] += r.q[j];
  r.d = static_cast<float>(1.0 / static_cast<double>(iscale));
  return r;
}

/// Number of differences between a library block and the formula (d, every q, every bsum).
int differences(const block_q8_K& got, const RefQ8K& want) {
  int n = (got.d != want.d) ? 1 : 0;
  for (int j = 0; j < 256; ++j) n += (got.qs[j] != want.q[j]);
  for (int j = 0; j < 16; ++j) n += (got.bsums[j] != want.bsums[j]);
  return n;
}

/// Random activations whose scale changes by up to 2^12 from block to block.
std::vector<float> random_activations(std::mt19937& rng, int n_blocks) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-6, 6);
  std::vector<float> x(256 * n_blocks);
  for (int b = 0; b < n_blocks; ++b) {
    const float scale = std::ldexp(1.0f, e(rng));
    for (int j = 0; j < 256; ++j) x[256 * b + j] = scale * nd(rng);
  }
  return x;
}

TEST(Q8K, RandomRowsMatchFormula) {
  std::mt19937 rng(7);
  const int nb = 64;
  const auto x = random_activations(rng, nb);
  std::vector<block_q8_K> y(nb);
  quantize_row_q8_K(x.data(), y.data(), 256 * nb);
  for (int b = 0; b < nb; ++b) {
    const RefQ8K want = ref_q8_K(&x[256 * b]);
    ASSERT_EQ(differences(y[b], want), 0) << "block " << b;
    int sum = 0;  // bsums are the plain sums of the quants
    for (int j = 0; j < 256; ++j) {
      sum += y[b].qs[j];
      if (j % 16 == 15) {
        EXPECT_EQ(y[b].bsums[j / 16], sum) << "block " << b;
        sum = 0;
      }
    }
  }
}

/// A block whose largest |x| is `max` (at index 0) and whose other values are given, rest zero.
std::vector<float> block_with(float max, const std::vector<float>& values) {
  std::vector<float> x(256, 0.0f);
  x[0] = max;
  for (size_t i = 0; i < values.size(); ++i) x[1 + i] = values[i];
  return x;
}

TEST(Q8K, TiesRoundHalfToEven) {
  // max = -127 makes iscale = -127 / -127 = 1 exactly, so q = round(x): these are exact ties.
  const std::vector<float> v = {0.5f,  1.5f,   2.5f,    3.5f,        -0.5f,     -1.5f,
                                -2.5f, 126.5f, -126.5f, 0.49999997f, 2.5000002f};
  const int even[] = {0, 2, 2, 4, 0, -2, -2, 126, -126, 0, 3};
  auto x = block_with(-127.0f, v);
  block_q8_K y;
  quantize_row_q8_K(x.data(), &y, 256);
  EXPECT_EQ(y.d, 1.0f);
  EXPECT_EQ(y.qs[0], -127);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(y.qs[1 + i], even[i]) << v[i];
  EXPECT_EQ(differences(y, ref_q8_K(x.data())), 0);
  // A quantizer rounding half away from zero is rejected by the same comparison.
  EXPECT_GT(differences(y, ref_q8_K(x.data(), /*half_away_from_zero=*/true)), 0);

  // max = +127: iscale = -1, so q = round(-x), ties again to even.
  x = block_with(127.0f, v);
  quantize_row_q8_K(x.data(), &y, 256);
  EXPECT_EQ(y.d, -1.0f);
  EXPECT_EQ(y.qs[0], -127);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(y.qs[1 + i], -even[i]) << v[i];
  EXPECT_EQ(differences(y, ref_q8_K(x.data())), 0);
}

TEST(Q8K, NegativeMaxKeepsItsSign) {
  // The value of largest magnitude is negative; it maps to -127 and d = -max / 127 > 0. The
  // positive value of equal magnitude that comes later maps to +127.
  auto x = block_with(-3.0f, {1.0f, -2.0f, 3.0f, 0.25f});
  block_q8_K y;
  quantize_row_q8_K(x.data(), &y, 256);
  EXPECT_EQ(y.qs[0], -127);
  EXPECT_EQ(y.qs[3], 127);
  EXPECT_GT(y.d, 0.0f);
  EXPECT_FLOAT_EQ(y.d * y.qs[0], -3.0f);
  EXPECT_EQ(differences(y, ref_q8_K(x.data())), 0);
  // A quantizer that takes max = |max| would flip every sign: rejected.
  EXPECT_GT(differences(y, ref_q8_K(x.data(), false, /*use_abs_max=*/true)), 0);
  // First occurrence wins among equal magnitudes: +3 before -3 makes max positive.
  x = block_with(3.0f, {-3.0f});
  quantize_row_q8_K(x.data(), &y, 256);
  EXPECT_EQ(y.qs[0], -127);
  EXPECT_EQ(y.qs[1], 127);
  EXPECT_LT(y.d, 0.0f);
  EXPECT_EQ(differences(y, ref_q8_K(x.data())), 0);
}

TEST(Q8K, AllZeroBlockGivesZeroScaleAndQuants) {
  std::vector<float> x(3 * 256, 0.0f);
  for (int j = 0; j < 256; ++j) x[j] = 0.001f * (j - 128);  // block 0 nonzero
  for (int j = 0; j < 256; j += 2) x[256 + j] = -0.0f;      // block 1: zeros, some negative
  x[2 * 256 + 255] = 5.0f;                                  // block 2: a single nonzero value
  std::vector<block_q8_K> y(3);
  std::memset(y.data(), 0x5a, sizeof(block_q8_K) * 3);  // garbage that must be overwritten
  quantize_row_q8_K(x.data(), y.data(), 3 * 256);
  EXPECT_EQ(y[1].d, 0.0f);
  for (int j = 0; j < 256; ++j) ASSERT_EQ(y[1].qs[j], 0);
  for (int j = 0; j < 16; ++j) ASSERT_EQ(y[1].bsums[j], 0);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(differences(y[b], ref_q8_K(&x[256 * b])), 0) << b;
  EXPECT_EQ(y[2].qs[255], -127);
  EXPECT_EQ(y[2].bsums[15], -127);
}

// ---------------------------------------------------------------------------------------------
// Dot products. Expected: sum_i w_i * (d_y * q_i) in f64, with w_i from the test's bit decoder.
// Tolerance: 1e-6 of the sum of |every product entering the dot| (for Q4_K both the scale part and
// the min part of each weight), since the library rounds a few f32 operations per super-block.

struct DotCase {
  double want = 0;
  double magnitude = 0;  // sum of |products|
};

template <typename F>
DotCase f64_dot(const std::vector<uint8_t>& w, testref::Geometry g, F value, const std::vector<block_q8_K>& a,
                Mutation mut = Mutation::kNone) {
  DotCase c;
  const auto wv = testref::decode_all(w, g, value, mut);
  for (size_t i = 0; i < wv.size(); ++i) {
    const double ai = static_cast<double>(a[i / 256].d) * a[i / 256].qs[i % 256];
    c.want += wv[i] * ai;
  }
  return c;
}

/// Sum of |d*sc*q| * |a| + |dmin*m| * |a| over a Q4_K row (scale part and min part separately).
double q4_K_magnitude(const std::vector<uint8_t>& w, const std::vector<block_q8_K>& a) {
  double s = 0;
  for (size_t b = 0; b < w.size() / 144; ++b) {
    const uint8_t* p = w.data() + 144 * b;
    const double dmin = std::fabs(testref::half_value(testref::le16(p, 2)));
    for (int i = 0; i < 256; ++i) {
      const double m = dmin * testref::k_scale6(p + 4, i / 32, 1, Mutation::kNone);
      const double full = testref::q4_K_value(p, i);
      const double ai = std::fabs(static_cast<double>(a[b].d) * a[b].qs[i]);
      s += (std::fabs(full + m) + m) * ai;  // |d*sc*q| = |w + dmin*m|
    }
  }
  return s;
}

/// The same for Q5_K (the min part of each weight is dmin * m of its sub-block).
double q5_K_magnitude(const std::vector<uint8_t>& w, const std::vector<block_q8_K>& a) {
  double s = 0;
  for (size_t b = 0; b < w.size() / 176; ++b) {
    const uint8_t* p = w.data() + 176 * b;
    const double dmin = std::fabs(testref::half_value(testref::le16(p, 2)));
    for (int i = 0; i < 256; ++i) {
      const double m = dmin * testref::k_scale6(p + 4, i / 32, 1, Mutation::kNone);
      const double full = testref::q5_K_value(p, i);
      s += (std::fabs(full + m) + m) * std::fabs(static_cast<double>(a[b].d) * a[b].qs[i]);
    }
  }
  return s;
}

double q6_K_magnitude(const std::vector<uint8_t>& w, const std::vector<block_q8_K>& a) {
  double s = 0;
  for (size_t b = 0; b < w.size() / 210; ++b)
    for (int i = 0; i < 256; ++i)
      s += std::fabs(testref::q6_K_value(w.data() + 210 * b, i) * a[b].d * a[b].qs[i]);
  return s;
}

std::vector<uint8_t> random_q4_K(std::mt19937& rng, int nb) {
  std::uniform_int_distribution<int> byte(0, 255), e(8, 16), m(0, 1023);
  std::vector<uint8_t> w(144 * nb);
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int b = 0; b < nb; ++b)
    for (int off : {0, 2}) {  // positive normal f16 d and dmin, as a quantizer writes them
      const uint16_t h = static_cast<uint16_t>((e(rng) << 10) | m(rng));
      w[144 * b + off] = h & 0xff, w[144 * b + off + 1] = h >> 8;
    }
  return w;
}

/// Random Q5_K bytes (every qh bit pattern) with positive normal f16 d and dmin.
std::vector<uint8_t> random_q5_K(std::mt19937& rng, int nb) {
  std::uniform_int_distribution<int> byte(0, 255), e(8, 16), m(0, 1023);
  std::vector<uint8_t> w(176 * nb);
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int b = 0; b < nb; ++b)
    for (int off : {0, 2}) {
      const uint16_t h = static_cast<uint16_t>((e(rng) << 10) | m(rng));
      w[176 * b + off] = h & 0xff, w[176 * b + off + 1] = h >> 8;
    }
  return w;
}

std::vector<uint8_t> random_q6_K(std::mt19937& rng, int nb) {
  std::uniform_int_distribution<int> byte(0, 255), e(8, 16), m(0, 1023);
  std::vector<uint8_t> w(210 * nb);
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
  for (int b = 0; b < nb; ++b) {
    const uint16_t h = static_cast<uint16_t>((e(rng) << 10) | m(rng));
    w[210 * b + 208] = h & 0xff, w[210 * b + 209] = h >> 8;
  }
  return w;
}

/// Q8_K blocks with raw random quants over the full int8 range (-128 included) and their bsums.
std::vector<block_q8_K> random_raw_q8_K(std::mt19937& rng, int nb) {
  std::uniform_int_distribution<int> q(-128, 127), e(-8, 4);
  std::vector<block_q8_K> a(nb);
  for (auto& blk : a) {
    blk.d = std::ldexp(1.0f + static_cast<float>(q(rng) + 128) / 256.0f, e(rng));
    for (int j = 0; j < 16; ++j) blk.bsums[j] = 0;
    for (int j = 0; j < 256; ++j) blk.qs[j] = static_cast<int8_t>(q(rng)), blk.bsums[j / 16] += blk.qs[j];
  }
  return a;
}

TEST(VecDot, Q4KMatchesF64Dot) {
  double worst = 0;  // largest |got - want| / magnitude, printed for the record
  std::mt19937 rng(11);
  const int nb = 8;
  for (int trial = 0; trial < 20; ++trial) {
    const auto w = random_q4_K(rng, nb);
    std::vector<block_q8_K> a(nb);
    if (trial % 2 == 0) {
      const auto x = random_activations(rng, nb);
      quantize_row_q8_K(x.data(), a.data(), 256 * nb);
    } else {
      a = random_raw_q8_K(rng, nb);
    }
    const double want = f64_dot(w, testref::kQ4_K, testref::q4_K_value, a).want;
    const double tol = 1e-6 * q4_K_magnitude(w, a);
    const double got = vec_dot_q4_K_q8_K(reinterpret_cast<const block_q4_K*>(w.data()), a.data(), 256 * nb);
    EXPECT_NEAR(got, want, tol) << "trial " << trial;
    worst = std::max(worst, std::fabs(got - want) / (tol / 1e-6));
    // The same comparison rejects a dot that drops the min term or swaps the nibble halves.
    for (Mutation m : {Mutation::kDropMin, Mutation::kSwapNibbles, Mutation::kScalesAsLow6}) {
      const double wrong = f64_dot(w, testref::kQ4_K, testref::q4_K_value, a, m).want;
      EXPECT_GT(std::fabs(wrong - want), tol) << "mutation " << static_cast<int>(m) << " trial " << trial;
    }
  }
  std::printf("Q4_K x Q8_K: largest |error| / sum|products| = %.3g (bound 1e-6)\n", worst);
}

TEST(VecDot, Q5KMatchesF64Dot) {
  double worst = 0;  // largest |got - want| / magnitude, printed for the record
  std::mt19937 rng(13);
  const int nb = 8;
  for (int trial = 0; trial < 20; ++trial) {
    const auto w = random_q5_K(rng, nb);
    std::vector<block_q8_K> a(nb);
    if (trial % 2 == 0) {
      const auto x = random_activations(rng, nb);
      quantize_row_q8_K(x.data(), a.data(), 256 * nb);
    } else {
      a = random_raw_q8_K(rng, nb);
    }
    const double want = f64_dot(w, testref::kQ5_K, testref::q5_K_value, a).want;
    const double tol = 1e-6 * q5_K_magnitude(w, a);
    const double got = vec_dot_q5_K_q8_K(reinterpret_cast<const block_q5_K*>(w.data()), a.data(), 256 * nb);
    EXPECT_NEAR(got, want, tol) << "trial " << trial;
    worst = std::max(worst, std::fabs(got - want) / (tol / 1e-6));
    for (Mutation m : {Mutation::kNoFifthBit, Mutation::kDropMin, Mutation::kSwapNibbles}) {
      const double wrong = f64_dot(w, testref::kQ5_K, testref::q5_K_value, a, m).want;
      EXPECT_GT(std::fabs(wrong - want), tol) << "mutation " << static_cast<int>(m) << " trial " << trial;
    }
  }
  std::printf("Q5_K x Q8_K: largest |error| / sum|products| = %.3g (bound 1e-6)\n", worst);
}

TEST(VecDot, Q6KMatchesF64Dot) {
  double worst = 0;  // largest |got - want| / magnitude, printed for the record
  std::mt19937 rng(12);
  const int nb = 8;
  for (int trial = 0; trial < 20; ++trial) {
    const auto w = random_q6_K(rng, nb);
    std::vector<block_q8_K> a(nb);
    if (trial % 2 == 0) {
      const auto x = random_activations(rng, nb);
      quantize_row_q8_K(x.data(), a.data(), 256 * nb);
    } else {
      a = random_raw_q8_K(rng, nb);
    }
    const double want = f64_dot(w, testref::kQ6_K, testref::q6_K_value, a).want;
    const double tol = 1e-6 * q6_K_magnitude(w, a);
    const double got = vec_dot_q6_K_q8_K(reinterpret_cast<const block_q6_K*>(w.data()), a.data(), 256 * nb);
    EXPECT_NEAR(got, want, tol) << "trial " << trial;
    worst = std::max(worst, std::fabs(got - want) / (tol / 1e-6));
    for (Mutation m : {Mutation::kNoOffset, Mutation::kQhPairsSwapped, Mutation::kScaleOf8}) {
      const double wrong = f64_dot(w, testref::kQ6_K, testref::q6_K_value, a, m).want;
      EXPECT_GT(std::fabs(wrong - want), tol) << "mutation " << static_cast<int>(m) << " trial " << trial;
    }
  }
  std::printf("Q6_K x Q8_K: largest |error| / sum|products| = %.3g (bound 1e-6)\n", worst);
}

TEST(VecDot, ExtremeBlocksDoNotOverflow) {
  // Largest integer sums the formats allow: Q4_K all quants 15, scales and mins 63 (Q5_K: quants
  // 31); Q6_K all quants -32 with scale -128; activations all -128.
  std::vector<uint8_t> w4(144, 0xff);
  w4[0] = 0x00, w4[1] = 0x3c;  // d = 1
  w4[2] = 0x00, w4[3] = 0x38;  // dmin = 0.5
  std::vector<uint8_t> w6(210, 0);
  for (int j = 0; j < 16; ++j) w6[192 + j] = 0x80;  // scale -128
  w6[208] = 0x00, w6[209] = 0x3c;                   // d = 1 (all ql/qh zero: q - 32 = -32)
  std::vector<uint8_t> w5(176, 0xff);
  w5[0] = 0x00, w5[1] = 0x3c;  // d = 1
  w5[2] = 0x00, w5[3] = 0x38;  // dmin = 0.5
  std::vector<block_q8_K> a(1);
  a[0].d = 1.0f;
  for (int j = 0; j < 256; ++j) a[0].qs[j] = -128;
  for (int j = 0; j < 16; ++j) a[0].bsums[j] = -2048;
  const double want4 = f64_dot(w4, testref::kQ4_K, testref::q4_K_value, a).want;
  const double want6 = f64_dot(w6, testref::kQ6_K, testref::q6_K_value, a).want;
  EXPECT_EQ(want4, 256.0 * (63 * 15 - 0.5 * 63) * -128);
  EXPECT_EQ(want6, 256.0 * (-128 * -32) * -128);
  const double want5 = f64_dot(w5, testref::kQ5_K, testref::q5_K_value, a).want;
  EXPECT_EQ(want5, 256.0 * (63 * 31 - 0.5 * 63) * -128);
  EXPECT_NEAR(vec_dot_q5_K_q8_K(reinterpret_cast<const block_q5_K*>(w5.data()), a.data(), 256), want5,
              1e-6 * std::fabs(want5));
  EXPECT_NEAR(vec_dot_q4_K_q8_K(reinterpret_cast<const block_q4_K*>(w4.data()), a.data(), 256), want4,
              1e-6 * std::fabs(want4));
  EXPECT_NEAR(vec_dot_q6_K_q8_K(reinterpret_cast<const block_q6_K*>(w6.data()), a.data(), 256), want6,
              1e-6 * std::fabs(want6));
}

}  // namespace
