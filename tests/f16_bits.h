// IEEE binary16 <-> binary32 by bit manipulation, for the tests' reference math and reference files.
// What a compiler's _Float16 conversions do (round to nearest even), written out because clang 14
// (the sanitizer and fuzz builds) has no _Float16 on x86. Checked against GCC's _Float16 on every
// half value and on float sweeps around every rounding boundary (tests/quant/f16_bits_test.cpp).
// Float to half after F. Giesen, "float->half variants" (float_to_half_fast3_rtne), public domain.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dllm::test {

/// f rounded to the nearest binary16 (ties to even), as bits; overflow gives +-inf, NaN a quiet NaN.
inline uint16_t f32_to_f16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t o;
  if (x >= (127u + 16u) << 23) {  // |f| >= 65536 (rounds to inf), inf or NaN
    o = x > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (x < (113u << 23)) {  // below the smallest normal half (2^-14): subnormal or zero
    // Adding 0.5 shifts the mantissa so that the FPU's own round-to-nearest-even rounds at 2^-24.
    const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    float magic, xf;
    std::memcpy(&magic, &magic_bits, 4);
    std::memcpy(&xf, &x, 4);
    xf += magic;
    uint32_t r;
    std::memcpy(&r, &xf, 4);
    o = static_cast<uint16_t>(r - magic_bits);
  } else {
    const uint32_t mant_odd = (x >> 13) & 1u;
    x += 0xC8000000u + 0xfffu;  // rebias the exponent (15 - 127, mod 2^32) and round half up ...
    x += mant_odd;              // ... or to even on a tie
    o = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

/// The float value of binary16 bits (exact: every half is a float).
inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);  // zero or subnormal: mant x 2^-24
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf, NaN (payload kept)
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// v rounded to the nearest binary16 value and back.
inline float round_f16(float v) {
  return f16_bits_to_f32(f32_to_f16_bits(v));
}

}  // namespace dllm::test
