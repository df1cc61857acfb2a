// Independent f64 decoders for the ggml block formats, for the quant tests only.
//
// Written from the byte layouts in ggml-common.h (block_q8_0, block_q5_0, block_q4_K, block_q5_K, block_q6_K)
// and deliberately structured unlike src/quant: every value is assembled bit by bit from a (byte,
// bit) address computed for that one element, and the arithmetic is done in double. Each decoder
// takes a Mutation so a test can show that its comparison rejects a plausible wrong decoder.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dllm::quant::testref {

/// Bytes per block and values per block of the formats below.
struct Geometry {
  int block_bytes;
  int block_values;
};
inline constexpr Geometry kQ8_0{34, 32};
inline constexpr Geometry kQ5_0{22, 32};
inline constexpr Geometry kQ4_K{144, 256};
inline constexpr Geometry kQ5_K{176, 256};
inline constexpr Geometry kQ6_K{210, 256};

/// Plausible decoding mistakes; kNone is the correct decoder.
enum class Mutation {
  kNone,
  kSwapNibbles,     ///< Q4_K/Q5_K: odd sub-blocks read the low nibble and even ones the high nibble
  kDropMin,         ///< Q4_K/Q5_K: forget "- dmin * m"
  kScalesAsLow6,    ///< Q4_K/Q5_K: sub-blocks 4..7 read their scale/min like 0..3 (low 6 bits, j + 4)
  kNoFifthBit,      ///< Q5_K: ignore qh
  kNoOffset,        ///< Q6_K: forget the -32
  kQhPairsSwapped,  ///< Q6_K: quarters 1 and 2 take each other's 2 high bits
  kScaleOf8,        ///< Q6_K: one scale per 32 values instead of per 16
  kUnsigned,        ///< Q8_0: qs read as uint8
};

/// Bit `bit` (0 = least significant) of byte `byte`.
inline int bit_at(const uint8_t* p, int byte, int bit) {
  return (p[byte] >> bit) & 1;
}

/// Little-endian u16 at byte offset `off`.
inline uint16_t le16(const uint8_t* p, int off) {
  return static_cast<uint16_t>(p[off] | (p[off + 1] << 8));
}

/// IEEE binary16 value in double, from the definition: (-1)^s * 2^(e-15) * (1 + m/1024) for
/// 0 < e < 31, (-1)^s * 2^-14 * m/1024 for e == 0, inf/NaN for e == 31.
inline double half_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  const double sign = s ? -1.0 : 1.0;
  if (e == 31) return m ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  return sign * std::ldexp(1024.0 + m, e - 25);
}

/// Q8_0 value i (0..31) of the block at p: d (f16, bytes 0-1) * qs[i] (int8, byte 2 + i).
inline double q8_0_value(const uint8_t* p, int i, Mutation mut = Mutation::kNone) {
  const int raw = p[2 + i];
  const int q = (mut == Mutation::kUnsigned) ? raw : (raw >= 128 ? raw - 256 : raw);
  return half_value(le16(p, 0)) * q;
}

/// Q5_0 value i (0..31) of the block at p: d (f16, bytes 0-1) * (q - 16), q = 4 low bits from byte
/// 6 + i % 16 (the low nibble for i < 16, the high nibble for i >= 16) and bit 4 = bit i of the
/// little-endian 32-bit qh (bytes 2-5), i.e. bit i % 8 of byte 2 + i / 8. kNoFifthBit ignores qh.
inline double q5_0_value(const uint8_t* p, int i, Mutation mut = Mutation::kNone) {
  int q = 0;
  for (int b = 0; b < 4; ++b) q |= bit_at(p, 6 + i % 16, b + (i < 16 ? 0 : 4)) << b;
  if (mut != Mutation::kNoFifthBit) q |= bit_at(p, 2 + i / 8, i % 8) << 4;
  return half_value(le16(p, 0)) * (q - 16);
}

/// 6-bit scale (which = 0) or min (which = 1) of sub-block s (0..7) from the 12 scale bytes at p.
/// Bit addresses per ggml's get_scale_min_k4: s < 4: scale = bits 0..5 of byte s, min = bits 0..5
/// of byte s + 4. s >= 4: bits 0..3 from byte s + 4 (scale: bits 0..3, min: bits 4..7); bits 4..5
/// from bits 6..7 of byte s - 4 (scale) or byte s (min).
inline int k_scale6(const uint8_t* p, int s, int which, Mutation mut) {
  int v = 0;
  if (s < 4 || mut == Mutation::kScalesAsLow6) {
    const int byte = (which == 0 ? s : s + 4) % 12;
    for (int b = 0; b < 6; ++b) v |= bit_at(p, byte, b) << b;
  } else {
    for (int b = 0; b < 4; ++b) v |= bit_at(p, s + 4, b + 4 * which) << b;
    const int hi_byte = which == 0 ? s - 4 : s;
    for (int b = 0; b < 2; ++b) v |= bit_at(p, hi_byte, 6 + b) << (4 + b);
  }
  return v;
}

/// 4-bit quant of value i of a Q4_K/Q5_K super-block whose qs start at p: sub-block s = i / 32,
/// position l = i % 32; byte 32 * (s / 2) + l, low nibble for even s, high nibble for odd s.
inline int k_nibble(const uint8_t* qs, int i, Mutation mut) {
  const int s = i / 32, l = i % 32;
  int half = s % 2;
  if (mut == Mutation::kSwapNibbles) half ^= 1;
  int v = 0;
  for (int b = 0; b < 4; ++b) v |= bit_at(qs, 32 * (s / 2) + l, 4 * half + b) << b;
  return v;
}

/// Q4_K value i (0..255): d (bytes 0-1), dmin (2-3), scales (4-15), qs (16-143).
inline double q4_K_value(const uint8_t* p, int i, Mutation mut = Mutation::kNone) {
  const int s = i / 32;
  const double d = half_value(le16(p, 0)), dmin = half_value(le16(p, 2));
  const int sc = k_scale6(p + 4, s, 0, mut), m = k_scale6(p + 4, s, 1, mut);
  const int q = k_nibble(p + 16, i, mut);
  return d * sc * q - (mut == Mutation::kDropMin ? 0.0 : dmin * m);
}

/// Q5_K value i: d (0-1), dmin (2-3), scales (4-15), qh (16-47), qs (48-175); bit 4 of the quant
/// of value l of sub-block s is bit s of qh[l].
inline double q5_K_value(const uint8_t* p, int i, Mutation mut = Mutation::kNone) {
  const int s = i / 32, l = i % 32;
  const double d = half_value(le16(p, 0)), dmin = half_value(le16(p, 2));
  const int sc = k_scale6(p + 4, s, 0, mut), m = k_scale6(p + 4, s, 1, mut);
  int q = k_nibble(p + 48, i, mut);
  if (mut != Mutation::kNoFifthBit) q |= bit_at(p + 16, l, s) << 4;
  return d * sc * q - (mut == Mutation::kDropMin ? 0.0 : dmin * m);
}

/// Q6_K value i: ql (0-127), qh (128-191), scales (192-207, int8), d (208-209). Half h = i / 128,
/// quarter g = (i % 128) / 32, l = i % 32: low 4 bits at byte 64h + l + 32 (g % 2), bits
/// 4 (g / 2) .. +3; high 2 bits at byte 128 + 32h + l, bits 2g, 2g + 1; scale = scales[i / 16].
inline double q6_K_value(const uint8_t* p, int i, Mutation mut = Mutation::kNone) {
  const int h = i / 128, g = (i % 128) / 32, l = i % 32;
  int q = 0;
  for (int b = 0; b < 4; ++b) q |= bit_at(p, 64 * h + l + 32 * (g % 2), 4 * (g / 2) + b) << b;
  int gh = g;
  if (mut == Mutation::kQhPairsSwapped && (g == 1 || g == 2)) gh = 3 - g;
  for (int b = 0; b < 2; ++b) q |= bit_at(p, 128 + 32 * h + l, 2 * gh + b) << (4 + b);
  const int sidx = (mut == Mutation::kScaleOf8) ? (i / 32) * 2 : i / 16;
  const int sc = static_cast<int8_t>(p[192 + sidx]);
  const double d = half_value(le16(p, 208));
  return d * sc * (mut == Mutation::kNoOffset ? q : q - 32);
}

/// All values of n_blocks consecutive blocks, decoded with `value(block, i, mut)`.
template <typename F>
std::vector<double> decode_all(const std::vector<uint8_t>& bytes, Geometry g, F value,
                               Mutation mut = Mutation::kNone) {
  const size_t nb = bytes.size() / g.block_bytes;
  std::vector<double> out(nb * g.block_values);
  for (size_t b = 0; b < nb; ++b)
    for (int i = 0; i < g.block_values; ++i)
      out[b * g.block_values + i] = value(bytes.data() + b * g.block_bytes, i, mut);
  return out;
}

}  // namespace dllm::quant::testref
