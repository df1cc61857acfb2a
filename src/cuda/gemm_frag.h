// The per-lane index and decode arithmetic of the int8 GEMM (gemm_int8.cu), shared by the kernel
// and by a CPU test (tests/cuda/gemm_frag_test.cpp) that runs it for all 32 lanes of a simulated warp
// with an mma written from the PTX manual, so the fragment decoding is checked on machines without a
// GPU. Plain C++ on the host (no CUDA headers); __host__ __device__ under nvcc.
//
// Lane = 4 * group + tig. Fragment layouts (PTX ISA, mma.m16n8k32 / m16n8k16 with .s8):
//   A (16 x 32): reg0 row group, k 4 tig..+3; reg1 row group + 8, same k; reg2 / reg3 the same, k + 16.
//   A (16 x 16): reg0 row group, k 4 tig..+3; reg1 row group + 8.
//   B (32 x 8):  reg0 k 4 tig..+3 of column group; reg1 k + 16.   B (16 x 8): reg0 only.
//   C (16 x 8):  c0, c1 row group, columns 2 tig, 2 tig + 1; c2, c3 row group + 8.
// A holds 16 weight rows (group: row r0 + group, group + 8: row r0 + group + 8), B 8 tokens.
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/k_scales.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#if defined(__CUDACC__)
#define DLLM_HD __host__ __device__ __forceinline__
#else
#define DLLM_HD inline
#endif

namespace dllm::cuda::kern::frag {

constexpr int kQ4KBytes = 144;
constexpr int kQ6KPaddedBytes = 224;

/// 4 bytes at p (4-byte aligned in the kernel's uses) as one little-endian word.
DLLM_HD uint32_t ld32(const void* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(p);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}

/// IEEE half at p (2-byte aligned) to float.
DLLM_HD float ld_f16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __half2float(*reinterpret_cast<const __half*>(p));
#else
  const uint32_t h = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8);
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float f;
  if (exp == 0) {
    f = static_cast<float>(man) * (1.0f / 16777216.0f);  // subnormal: man * 2^-24
  } else if (exp == 31) {
    const uint32_t bits = 0x7f800000u | (man << 13);
    std::memcpy(&f, &bits, 4);
  } else {
    const uint32_t bits = ((exp + 112) << 23) | (man << 13);
    std::memcpy(&f, &bits, 4);
  }
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

/// Per-byte a - b (mod 256), as __vsub4.
DLLM_HD uint32_t vsub4(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __vsub4(a, b);
#else
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= ((((a >> (8 * i)) & 0xffu) - ((b >> (8 * i)) & 0xffu)) & 0xffu) << (8 * i);
  return r;
#endif
}

/// Q4_K, sub-block j (values 32 j .. 32 j + 31) of the super-blocks ba (row group) and bb (row
/// group + 8): the 16 x 32 A fragment of lane tig. The 32 values of sub-block j are the low (j even)
/// or high (j odd) nibbles of the 32 bytes qs[32 (j / 2) ..]; qs starts at byte 16 of the block.
DLLM_HD void q4k_a_frag(const uint8_t* ba, const uint8_t* bb, int j, int tig, uint32_t (&a)[4]) {
  const int shift = 4 * (j & 1);
  const int off = 16 + 32 * (j / 2) + 4 * tig;
  a[0] = (ld32(ba + off) >> shift) & 0x0f0f0f0fu;
  a[1] = (ld32(bb + off) >> shift) & 0x0f0f0f0fu;
  a[2] = (ld32(ba + off + 16) >> shift) & 0x0f0f0f0fu;
  a[3] = (ld32(bb + off + 16) >> shift) & 0x0f0f0f0fu;
}

/// Q4_K row factors of sub-block j: f = d * sc_j, m = dmin * m_j (x = f q - m).
DLLM_HD void q4k_factors(const uint8_t* blk, int j, float& f, float& m) {
  int sc, mn;
  quant::q4k_scale_min(j, blk + 4, sc, mn);
  f = ld_f16(blk) * static_cast<float>(sc);
  m = ld_f16(blk + 2) * static_cast<float>(mn);
}

/// Q6_K (padded block: ql[128] qh[64] scales[16] d), sub-block j (values 16 j .. 16 j + 15): the 16 x 16
/// A fragment of lane tig, q - 32 in each byte. Values 16 j + 4 tig..+3 lie in half h = j / 8, 32-value
/// group gq = (j % 8) / 2 of that half, at position l = 16 (j & 1) + 4 tig: low nibble from ql[64 h +
/// l + 32 (gq & 1)] (high nibble for gq >= 2), 2 high bits from bits 2 gq of qh[32 h + l].
DLLM_HD void q6k_a_frag(const uint8_t* ba, const uint8_t* bb, int j, int tig, uint32_t (&a)[2]) {
  const int h = j / 8, gq = (j % 8) / 2, l = 16 * (j & 1) + 4 * tig;
  const int lo_off = 64 * h + l + 32 * (gq & 1), lo_shift = gq >= 2 ? 4 : 0;
  const int hi_off = 128 + 32 * h + l, hi_shift = 2 * gq;
  a[0] = vsub4(((ld32(ba + lo_off) >> lo_shift) & 0x0f0f0f0fu) |
                   (((ld32(ba + hi_off) >> hi_shift) & 0x03030303u) << 4),
               0x20202020u);
  a[1] = vsub4(((ld32(bb + lo_off) >> lo_shift) & 0x0f0f0f0fu) |
                   (((ld32(bb + hi_off) >> hi_shift) & 0x03030303u) << 4),
               0x20202020u);
}

/// Q6_K row factor of sub-block j: d * scales[j].
DLLM_HD float q6k_factor(const uint8_t* blk, int j) {
  return ld_f16(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + j]));
}

/// Int8 activations (kernels.h: q n_tok x n_in, ds n_tok x n_in/32 pairs), relative to the first
/// token of the block's token tile. B fragment of lane (group, tig) for token tile nt (tokens 8 nt..):
/// token 8 nt + group, values 32 g + 4 tig..+3 (reg0) and + 16 (reg1) for the Q4_K sub-block whose
/// activation group is g; for the Q6_K sub-block j of super-block sb, values 256 sb + 16 j + 4 tig..+3.
DLLM_HD int64_t b_offset_k32(int64_t n_in, int nt, int group, int tig, int64_t g) {
  return (8 * nt + group) * n_in + 32 * g + 4 * tig;
}
DLLM_HD int64_t b_offset_k16(int64_t n_in, int nt, int group, int tig, int64_t sb, int j) {
  return (8 * nt + group) * n_in + 256 * sb + 16 * j + 4 * tig;
}
/// Index (in floats) of the {d, d * sum} pair of activation group g for the token of C column 2 tig
/// of token tile nt; the pair of column 2 tig + 1 follows n_groups pairs later.
DLLM_HD int64_t ds_index(int64_t n_groups, int nt, int tig, int64_t g) {
  return 2 * ((8 * nt + 2 * tig) * n_groups + g);
}

/// Adds one sub-block's integer tile c into acc: rows group / group + 8 have factors fa / fb and min
/// terms ma / mb; ds0 / ds1 are the {d, d * sum} pairs of tokens 2 tig and 2 tig + 1 for this
/// sub-block's 32 activation values. y += f * d_a * S - m * (d_a * sum a).
DLLM_HD void accumulate(float (&acc)[4], const int (&c)[4], float fa, float fb, float ma, float mb,
                        const float* ds0, const float* ds1) {
  acc[0] += fa * ds0[0] * static_cast<float>(c[0]) - ma * ds0[1];
  acc[1] += fa * ds1[0] * static_cast<float>(c[1]) - ma * ds1[1];
  acc[2] += fb * ds0[0] * static_cast<float>(c[2]) - mb * ds0[1];
  acc[3] += fb * ds1[0] * static_cast<float>(c[3]) - mb * ds1[1];
}

}  // namespace dllm::cuda::kern::frag

#undef DLLM_HD
