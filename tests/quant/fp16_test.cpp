// F16 and BF16 conversions against the IEEE definitions evaluated in f64: every one of the 65536
// bit patterns for decoding; for fp32 -> fp16, every rounding midpoint between neighbouring halves
// (ties to even), its neighbours one f32 ulp away, overflow, underflow and random floats checked
// against a nearest-value search over the table of all halves.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quant/quant.h"
#include "quant/ref_decoders.h"

namespace {

using dllm::gguf::GgmlType;
using namespace dllm::quant;

bool is_nan_half(uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

TEST(Fp16, DecodesEveryBitPatternExactly) {
  int checked = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;
    if (is_nan_half(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      // payload (including the quiet bit) sits in the top 10 mantissa bits of the f32
      ASSERT_EQ((std::bit_cast<uint32_t>(f) >> 13) & 0x3ff, h & 0x3ff) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), testref::half_value(static_cast<uint16_t>(h))) << std::hex << h;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 65536);
  // a few values written out from the definition
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(fp16_to_fp32(0x7c00), INFINITY);
  EXPECT_EQ(fp16_to_fp32(0xfc00), -INFINITY);
}

TEST(Fp16, EncodeRoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h)));
    if (is_nan_half(static_cast<uint16_t>(h))) {
      ASSERT_TRUE(is_nan_half(back)) << std::hex << h << " -> " << back;
      ASSERT_EQ(back & 0x8000, h & 0x8000);
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(Fp16, EncodeRoundsMidpointsToEven) {
  int midpoints = 0;
  for (uint16_t h = 0; h < 0x7bff; ++h) {  // every pair of neighbouring finite non-negative halves
    const double a = testref::half_value(h), b = testref::half_value(static_cast<uint16_t>(h + 1));
    const double mid = (a + b) / 2;
    const float fm = static_cast<float>(mid);
    ASSERT_EQ(static_cast<double>(fm), mid) << "midpoint not representable in f32 at " << h;
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(fp32_to_fp16(s * fm), even | sign) << std::hex << h;
      ASSERT_EQ(fp32_to_fp16(s * std::nextafter(fm, INFINITY)), (h + 1) | sign) << std::hex << h;
      ASSERT_EQ(fp32_to_fp16(s * std::nextafter(fm, 0.0f)), h | sign) << std::hex << h;
    }
    ++midpoints;
  }
  EXPECT_EQ(midpoints, 0x7bff);
}

TEST(Fp16, EncodeOverflowUnderflowAndSpecials) {
  // 65520 is halfway between 65504 (largest half) and 65536 (the next step): even -> infinity.
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(-65520.0f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::max()), 0x7c00);
  // 2^-25 is halfway between 0 and the smallest subnormal 2^-24: even -> zero.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(fp32_to_fp16(1e-40f), 0x0000);  // f32 subnormal
  EXPECT_EQ(fp32_to_fp16(-1e-40f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_TRUE(is_nan_half(fp32_to_fp16(std::nanf(""))));
  EXPECT_TRUE(is_nan_half(fp32_to_fp16(-std::nanf(""))));
  EXPECT_EQ(fp32_to_fp16(-std::nanf("")) & 0x8000, 0x8000);
  // a signalling NaN whose payload is only in the low bits must not become infinity
  EXPECT_TRUE(is_nan_half(fp32_to_fp16(std::bit_cast<float>(0x7f800001u))));
}

/// Nearest half by search over the sorted table of all non-negative finite halves (ties to the
/// even encoding), written from the definition of round-to-nearest-even, not from bit tricks.
uint16_t nearest_half(float x, const std::vector<double>& table) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double v = std::fabs(static_cast<double>(x));
  if (v >= 65520.0) return sign | 0x7c00;  // half of the last step above 65504 and beyond
  // largest h with table[h] <= v
  const auto it = std::upper_bound(table.begin(), table.end(), v);
  const size_t h = static_cast<size_t>(it - table.begin()) - 1;
  if (h + 1 == table.size()) return static_cast<uint16_t>(sign | h);
  const double dl = v - table[h], dh = table[h + 1] - v;
  size_t r = h;
  if (dh < dl || (dh == dl && (h & 1))) r = h + 1;
  return static_cast<uint16_t>(sign | r);
}

TEST(Fp16, EncodeMatchesNearestSearchOnRandomFloats) {
  std::vector<double> table(0x7c00);
  for (uint16_t h = 0; h < 0x7c00; ++h) table[h] = testref::half_value(h);
  std::mt19937 rng(99);
  // f32 exponents from 2^-40 to 2^18: below the subnormal halves, through the normal range, past
  // overflow; every mantissa bit random.
  std::uniform_int_distribution<uint32_t> e(87, 145), m(0, 0x7fffff), s(0, 1);
  for (int k = 0; k < 1000000; ++k) {
    const float x = std::bit_cast<float>((s(rng) << 31) | (e(rng) << 23) | m(rng));
    ASSERT_EQ(fp32_to_fp16(x), nearest_half(x, table)) << x;
  }
}

TEST(Fp16, BrokenVariantsAreRejected) {
  // The checks above must be able to fail: a decoder that flushes subnormals to zero and an
  // encoder that truncates (rounds toward zero) both disagree with the references.
  int bad_decode = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    if (is_nan_half(static_cast<uint16_t>(h))) continue;
    const float flushed = ((h & 0x7c00) == 0) ? 0.0f : fp16_to_fp32(static_cast<uint16_t>(h));
    if (static_cast<double>(flushed) != testref::half_value(static_cast<uint16_t>(h))) ++bad_decode;
  }
  EXPECT_GT(bad_decode, 0);
  std::vector<double> table(0x7c00);
  for (uint16_t h = 0; h < 0x7c00; ++h) table[h] = testref::half_value(h);
  int bad_encode = 0;
  for (uint16_t h = 0x3c00; h < 0x3c40; ++h) {
    const float above_mid = std::nextafter(
        static_cast<float>((testref::half_value(h) + testref::half_value(static_cast<uint16_t>(h + 1))) / 2),
        INFINITY);
    const uint16_t truncated = static_cast<uint16_t>(h);  // what a round-toward-zero encoder returns
    if (truncated != nearest_half(above_mid, table)) ++bad_encode;
  }
  EXPECT_EQ(bad_encode, 0x40);
}

/// bfloat16 in f64 from its definition: 1 sign, 8 exponent bits (bias 127), 7 mantissa bits.
double bf16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 7) & 255, m = h & 127;
  const double sign = s ? -1.0 : 1.0;
  if (e == 255) return m ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -133);
  return sign * std::ldexp(128.0 + m, e - 134);
}

TEST(Bf16, DecodesEveryBitPatternExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(static_cast<uint16_t>(h));
    ASSERT_EQ(std::signbit(f), (h >> 15) != 0) << std::hex << h;
    const double want = bf16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::bit_cast<uint32_t>(f) >> 16, h);  // payload kept
    } else {
      ASSERT_EQ(static_cast<double>(f), want) << std::hex << h;
    }
  }
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xc040), -3.0f);
}

TEST(DequantizeRow, F16AndBf16RowsUseTheScalarConversions) {
  std::vector<uint16_t> bits(65536);
  for (uint32_t h = 0; h < 65536; ++h) bits[h] = static_cast<uint16_t>(h);
  std::vector<float> out(65536);
  dequantize_row(GgmlType::F16, bits.data(), out.data(), 65536);
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), std::bit_cast<uint32_t>(fp16_to_fp32(bits[h]))) << h;
  dequantize_row(GgmlType::BF16, bits.data(), out.data(), 65536);
  for (uint32_t h = 0; h < 65536; ++h) ASSERT_EQ(std::bit_cast<uint32_t>(out[h]), h << 16) << h;
}

}  // namespace
