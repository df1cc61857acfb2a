// tests/f16_bits.h, the binary16 conversions the reference math uses: against values worked out by
// hand from IEEE 754 (always), and against the compiler's _Float16 on every half value and on the
// floats around each rounding boundary where the compiler has _Float16 on this target (GCC; clang 14
// on x86 has not, which is why f16_bits.h exists).
#include "f16_bits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace dllm::test {
namespace {

TEST(F16Bits, HandWorkedValues) {
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);                      // the largest half
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7bff);                      // below the midpoint to 2^16
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);                      // the midpoint: to even, which is inf
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);         // the smallest normal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);         // half of it: tie to even 0
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 ulp: tie to even 2
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie between 1 and 1 + 2^-10: even
  EXPECT_EQ(f32_to_f16_bits(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie between 0x3c01 and 0x3c02: even
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(f32_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()) & 0x7c00, 0x7c00);
  EXPECT_NE(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()) & 0x03ff, 0);
  EXPECT_EQ(f16_bits_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_bits_to_f32(0x83ff), -std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::isinf(f16_bits_to_f32(0xfc00)) && f16_bits_to_f32(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7e00)));
}

#if defined(__FLT16_MAX__)
uint16_t compiler_bits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TEST(F16Bits, EqualTheCompilersFloat16EverywhereItMatters) {
  long mismatches = 0;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto b = static_cast<uint16_t>(h);
    _Float16 x;
    std::memcpy(&x, &b, 2);
    const float want = static_cast<float>(x), got = f16_bits_to_f32(b);
    if (!(std::isnan(want) && std::isnan(got)) && std::memcmp(&want, &got, 4) != 0) ++mismatches;
    if (std::isnan(want)) continue;
    // The floats next to each half value, and the midpoint to the next one with its neighbours.
    uint32_t wb;
    std::memcpy(&wb, &want, 4);
    const float next = f16_bits_to_f32(static_cast<uint16_t>(b + 1));
    const auto mid = static_cast<float>((static_cast<double>(want) + next) / 2);
    uint32_t mb;
    std::memcpy(&mb, &mid, 4);
    for (const uint32_t base : {wb, mb}) {
      for (int d = -2; d <= 2; ++d) {
        const uint32_t fb = base + static_cast<uint32_t>(d);
        float f;
        std::memcpy(&f, &fb, 4);
        if (!std::isnan(f) && f32_to_f16_bits(f) != compiler_bits(f)) ++mismatches;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}
#else
TEST(F16Bits, EqualTheCompilersFloat16EverywhereItMatters) {
  GTEST_SKIP() << "this compiler has no _Float16 on this target: the hand-worked values are the check";
}
#endif

}  // namespace
}  // namespace dllm::test
