// Q8_0 activation quantization (ggml-cpu's x86 quantize_row_q8_0) against its formula evaluated in
// f64, and the Q8_0 x Q8_0 dot product against an f64 dot of the weights as the test's own bit
// decoder reads them with the dequantized Q8_0 activations.
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

/// Round half to even in f64, from the definition.
double round_half_even(double t) {
  const double fl = std::floor(t);
  const double frac = t - fl;
  if (frac > 0.5) return fl + 1;
  if (frac < 0.5) return fl;
  return std::fmod(fl, 2.0) == 0.0 ? fl : fl + 1;
}

/// How a quantizer may get the formula wrong: ggml's portable quantize_row_q8_0_ref takes
/// id = 1 / d and rounds half away from zero, where the x86 code llama.cpp runs takes
/// id = 127 / amax and rounds half to even.
struct Variant {
  bool id_from_d = false;
  bool half_away = false;
};

/// One Q8_0 block from the formula: amax = max |x|; d = f16(f32(amax / 127)); id = f32(127 / amax)
/// (0 for amax = 0); q = round-half-even(f32(x * id)). The f64 quotient and product of f32 operands
/// rounded once to f32 are the f32 results (see q8_k_test.cpp). fp32_to_fp16 is checked against
/// the definition of binary16 for every input class in fp16_test.cpp.
struct RefQ80 {
  uint16_t d = 0;
  int q[32] = {};
};
RefQ80 ref_q8_0(const float* x, Variant v = {}) {
  RefQ80 r;
  double amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(static_cast<double>(x[j])));
  const float d = static_cast<float>(amax / 127.0);
  r.d = fp32_to_fp16(d);
  if (amax == 0) return r;
  const float id = v.id_from_d ? static_cast<float>(1.0 / d) : static_cast<float>(127.0 / amax);
  for (int j = 0; j < 32; ++j) {
    const double t = static_cast<double>(static_cast<float>(static_cast<double>(x[j]) * id));
    r.q[j] = static_cast<int>(v.half_away ? std::round(t) : round_half_even(t));
  }
  return r;
}

int differences(const block_q8_0& got, const RefQ80& want) {
  int n = got.d != want.d ? 1 : 0;
  for (int j = 0; j < 32; ++j) n += got.qs[j] != want.q[j];
  return n;
}

TEST(Q80, RandomRowsMatchFormula) {
  std::mt19937 rng(21);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> e(-10, 10);
  const int nb = 256;
  std::vector<float> x(32 * nb);
  for (int b = 0; b < nb; ++b) {
    const float scale = std::ldexp(1.0f, e(rng));
    for (int j = 0; j < 32; ++j) x[32 * b + j] = scale * nd(rng);
  }
  std::vector<block_q8_0> y(nb);
  quantize_row_q8_0(x.data(), y.data(), 32 * nb);
  for (int b = 0; b < nb; ++b) {
    ASSERT_EQ(differences(y[b], ref_q8_0(&x[32 * b])), 0) << "block " << b;
    // The value of largest magnitude maps to +-127.
    int qmax = 0;
    for (int j = 0; j < 32; ++j) qmax = std::max(qmax, std::abs(int(y[b].qs[j])));
    EXPECT_EQ(qmax, 127) << "block " << b;
  }
}

TEST(Q80, TiesRoundHalfToEven) {
  // amax = 127 makes id = 127 / 127 = 1 exactly, so q = round(x): exact ties.
  const std::vector<float> v = {0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 2.5000002f};
  const int even[] = {0, 2, 2, 4, 0, -2, -2, 126, -126, 3};
  std::vector<float> x(32, 0.0f);
  x[0] = -127.0f;
  for (size_t i = 0; i < v.size(); ++i) x[1 + i] = v[i];
  block_q8_0 y;
  quantize_row_q8_0(x.data(), &y, 32);
  EXPECT_EQ(fp16_to_fp32(y.d), 1.0f);
  EXPECT_EQ(y.qs[0], -127);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(y.qs[1 + i], even[i]) << v[i];
  EXPECT_EQ(differences(y, ref_q8_0(x.data())), 0);
  // ggml's portable rounding (half away from zero) is rejected by the same comparison.
  EXPECT_GT(differences(y, ref_q8_0(x.data(), {false, true})), 0);
}

// id = 127 / amax differs from 1 / (amax / 127) in the last bit for some amax; a value close to a
// rounding boundary then quantizes differently. Such a block is found by search, and the library must
// agree with the formula, not with the 1 / d variant.
TEST(Q80, ScaleIsReciprocalOfAmaxNotOfD) {
  bool found = false;
  std::vector<float> x(32, 0.0f);
  for (float amax = 1.0f; amax < 2.0f && !found; amax = std::nextafter(amax, 3.0f)) {
    const float d = amax / 127.0f;
    const float id1 = 127.0f / amax, id2 = 1.0f / d;
    if (id1 == id2) continue;
    for (int k = 0; k < 126 && !found; ++k) {
      float xv = float((k + 0.5) / id1);
      for (int step = 0; step < 8 && !found; ++step, xv = std::nextafter(xv, 2.0f * xv)) {
        if (std::nearbyint(xv * id1) != std::nearbyint(xv * id2)) {
          x[0] = amax;
          x[1] = xv;
          found = true;
        }
      }
    }
  }
  ASSERT_TRUE(found) << "no block where the two scales round a value differently";
  block_q8_0 y;
  quantize_row_q8_0(x.data(), &y, 32);
  EXPECT_EQ(differences(y, ref_q8_0(x.data())), 0);
  EXPECT_GT(differences(y, ref_q8_0(x.data(), {true, false})), 0);
}

TEST(Q80, AllZeroBlockGivesZeroScaleAndQuants) {
  std::vector<float> x(3 * 32, 0.0f);
  for (int j = 0; j < 32; ++j) x[j] = 0.01f * (j - 16);
  for (int j = 0; j < 32; j += 2) x[32 + j] = -0.0f;
  x[2 * 32 + 31] = -5.0f;
  std::vector<block_q8_0> y(3);
  std::memset(y.data(), 0x5a, sizeof(block_q8_0) * 3);
  quantize_row_q8_0(x.data(), y.data(), 3 * 32);
  EXPECT_EQ(y[1].d, 0);
  for (int j = 0; j < 32; ++j) ASSERT_EQ(y[1].qs[j], 0);
  EXPECT_EQ(y[2].qs[31], -127);
  for (int b = 0; b < 3; ++b) EXPECT_EQ(differences(y[b], ref_q8_0(&x[32 * b])), 0) << b;
}

// ---------------------------------------------------------------------------------------------
// Dot product. Expected: sum_i w_i * (d_y * q_i) in f64, w_i from the test's bit decoder.

std::vector<uint8_t> random_q8_0(std::mt19937& rng, int nb) {
  std::uniform_int_distribution<int> byte(0, 255), e(8, 16), m(0, 1023);
  std::vector<uint8_t> w(34 * nb);
  for (auto& v : w) v = static_cast<uint8_t>(byte(rng));  // qs over the full int8 range, -128 too
  for (int b = 0; b < nb; ++b) {
    const uint16_t h = static_cast<uint16_t>((e(rng) << 10) | m(rng));
    w[34 * b] = h & 0xff, w[34 * b + 1] = h >> 8;
  }
  return w;
}

struct Dot {
  double value = 0, magnitude = 0;  // f64 dot and sum of |products|
};
Dot f64_dot(const std::vector<uint8_t>& w, const std::vector<block_q8_0>& a, Mutation mut = Mutation::kNone) {
  Dot r;
  const auto wv = testref::decode_all(w, testref::kQ8_0, testref::q8_0_value, mut);
  for (size_t i = 0; i < wv.size(); ++i) {
    const double ai = testref::half_value(a[i / 32].d) * a[i / 32].qs[i % 32];
    r.value += wv[i] * ai;
    r.magnitude += std::fabs(wv[i] * ai);
  }
  return r;
}

TEST(VecDot, Q80MatchesF64Dot) {
  double worst = 0;
  std::mt19937 rng(22);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> q(-128, 127), e(8, 16), m(0, 1023);
  const int nb = 16;
  for (int trial = 0; trial < 20; ++trial) {
    const auto w = random_q8_0(rng, nb);
    std::vector<block_q8_0> a(nb);
    if (trial % 2 == 0) {
      std::vector<float> x(32 * nb);
      for (float& v : x) v = nd(rng);
      quantize_row_q8_0(x.data(), a.data(), 32 * nb);
    } else {  // raw blocks, -128 included
      for (auto& blk : a) {
        blk.d = static_cast<uint16_t>((e(rng) << 10) | m(rng));
        for (auto& v : blk.qs) v = static_cast<int8_t>(q(rng));
      }
    }
    const Dot want = f64_dot(w, a);
    const double tol = 1e-6 * want.magnitude;
    const double got = vec_dot_q8_0_q8_0(reinterpret_cast<const block_q8_0*>(w.data()), a.data(), 32 * nb);
    EXPECT_NEAR(got, want.value, tol) << "trial " << trial;
    worst = std::max(worst, std::fabs(got - want.value) / want.magnitude);
    // Reading the quants as unsigned bytes is rejected by the same comparison.
    EXPECT_GT(std::fabs(f64_dot(w, a, Mutation::kUnsigned).value - want.value), tol) << trial;
  }
  std::printf("Q8_0 x Q8_0: largest |error| / sum|products| = %.3g (bound 1e-6)\n", worst);
}

TEST(VecDot, Q80ExtremeBlockDoesNotOverflow) {
  std::vector<uint8_t> w(34, 0x80);  // every quant -128
  w[0] = 0x00, w[1] = 0x3c;          // d = 1
  std::vector<block_q8_0> a(1);
  a[0].d = 0x3c00;
  for (auto& v : a[0].qs) v = -128;
  EXPECT_EQ(vec_dot_q8_0_q8_0(reinterpret_cast<const block_q8_0*>(w.data()), a.data(), 32), 32.0f * 16384.0f);
  EXPECT_EQ(f64_dot(w, a).value, 32.0 * 16384.0);
}

}  // namespace
