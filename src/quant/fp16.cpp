// IEEE 754 binary16 and bfloat16 conversions, bit-exact, written from the formats' definitions
// (binary16: 1 sign, 5 exponent bits biased by 15, 10 mantissa bits; bfloat16: the top 16 bits of a
// binary32). Portable C++: no F16C, so results do not depend on the build's ISA flags.
#include <bit>
#include <cstdint>

#include "quant/quant.h"

namespace dllm::quant {

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    // inf, or NaN with its payload kept in the top mantissa bits (quiet bit stays where it was).
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: mant * 2^-24. Normalize: shift until the implicit bit (bit 10) is set; each
    // shift lowers the exponent by one, starting from that of 2^-14 (the smallest normal half).
    int e = -14;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (static_cast<uint32_t>(e + 127) << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {
    // NaN: keep it a NaN (quiet bit forced, as x86 F16C does) with the payload's top bits.
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 = 65504 (largest half) + half an ulp (16): from there on, round-to-nearest-even gives inf.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t e = a >> 23;
  if (a < 0x38800000u) {
    // Below 2^-14: result is a subnormal half (units of 2^-24) or zero. With the 24-bit significand
    // m (implicit bit included) the value is m * 2^(e - 150) = (m >> shift) units, shift = 126 - e.
    if (e < 102) return sign;  // < 2^-25: under half a unit, rounds to zero (e == 0 included)
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 .. 24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into 0x400 = 2^-14: correct
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: rebias the exponent (127 -> 15), keep 10 of 23 mantissa bits, round half to even on
  // the 13 dropped bits. A carry out of the mantissa correctly bumps the exponent.
  uint32_t r = ((e - 112) << 10) | ((a >> 13) & 0x3ffu);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float bf16_to_fp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

}  // namespace dllm::quant
