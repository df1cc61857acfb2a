// AVX-512 VNNI kernels over the packed 16-row groups (compiled with -mavx512f/bw/vl/dq/vnni).
//
// Tile: 16 rows (one zmm of int32 lanes) x NT tokens. For each 64-byte weight line the kernel unpacks
// two u8 vectors (low and high nibbles) and feeds each to NT vpdpbusd, one per token, whose s8 operand
// is 4 activation bytes broadcast to all 16 lanes (an embedded {1to16} memory broadcast, so no shuffle
// uop). Per 32-weight sub-block (Q4_K) or 16-weight sub-block (Q6_K) the int32 sums are multiplied by
// the per-row integer scales (vpmulld) and kept in int32 for the whole super-block (bounds: Q4_K
// |sum| <= 8 * 63 * 32 * 15 * 128 < 2^31, Q6_K <= 16 * 128 * 16 * 63 * 128 + offset < 2^31); the zero
// points come from the activation sums through vpdpwssd, once per super-block; f32 only at the end of a
// super-block: acc += d_x * (d * S - dmin * M).
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once these inline into the tiles (a known false positive); nothing here is.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstring>

#include "cpu/qgemm.h"

namespace dllm::cpu::qgemm {
namespace {

// 4 bytes at p broadcast to every int32 lane (vpbroadcastd / embedded broadcast).
inline __m512i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Lanes of group g that fall inside [o_begin, o_end).
inline __mmask16 row_mask(const GemmArgs& a, int64_t g) {
  const int64_t lo = std::max<int64_t>(a.o_begin - g * kRows, 0);
  const int64_t hi = std::min<int64_t>(a.o_end - g * kRows, kRows);
  if (hi <= lo) return 0;
  return __mmask16(((1u << hi) - 1) & ~((1u << lo) - 1));
}

// Q4_K: NT tokens starting at x (rows stride n_sb blocks) against one group's n_sb blocks.
template <int NT>
void q4_K_tile(const Q4KBlock* w, int64_t n_sb, const quant::block_q8_K* x, const int16_t* bs32, float* y,
               int64_t ldy, __mmask16 mask) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    const Q4KBlock& b = w[sb];
    // Min term: M = sum_j m[j] * bs32[j], two sub-blocks per vpdpwssd (int16 pairs).
    __m512i macc[NT], sacc[NT];
    for (int t = 0; t < NT; ++t) macc[t] = sacc[t] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m512i mp = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.mins[p])));
      for (int t = 0; t < NT; ++t) {
        macc[t] = _mm512_dpwssd_epi32(macc[t], mp, bcast32(bs32 + (t * n_sb + sb) * 8 + 2 * p));
      }
    }
    for (int j = 0; j < 8; ++j) {
      // Two accumulator chains per token (low and high nibbles) to cover vpdpbusd latency.
      __m512i ia[NT], ib[NT];
      for (int t = 0; t < NT; ++t) ia[t] = ib[t] = _mm512_setzero_si512();
      for (int p = 0; p < 4; ++p) {
        const __m512i c = _mm512_load_si512(b.qs[j][p]);
        const __m512i lo = _mm512_and_si512(c, m4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(c, 4), m4);
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * j + 4 * p;
          ia[t] = _mm512_dpbusd_epi32(ia[t], lo, bcast32(xq));
          ib[t] = _mm512_dpbusd_epi32(ib[t], hi, bcast32(xq + 16));
        }
      }
      const __m512i sc = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.scales[j])));
      for (int t = 0; t < NT; ++t) {
        sacc[t] = _mm512_add_epi32(sacc[t], _mm512_mullo_epi32(_mm512_add_epi32(ia[t], ib[t]), sc));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.d)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.dmin)));
    for (int t = 0; t < NT; ++t) {
      const __m512 f =
          _mm512_fmsub_ps(d, _mm512_cvtepi32_ps(sacc[t]), _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(macc[t])));
      acc[t] = _mm512_fmadd_ps(f, _mm512_set1_ps(x[t * n_sb + sb].d), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

// Q6_K: as q4_K_tile; q = low nibble | 2 high bits << 4 (0..63), the -32 enters through the bsums.
template <int NT>
void q6_K_tile(const Q6KBlock* w, int64_t n_sb, const quant::block_q8_K* x, float* y, int64_t ldy,
               __mmask16 mask) {
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i m30 = _mm512_set1_epi8(0x30);
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    const Q6KBlock& b = w[sb];
    __m512i sacc[NT];
    for (int t = 0; t < NT; ++t) sacc[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      // (sc[2s], sc[2s+1]) as int16 pairs; times -32 they subtract 32 * sc * bsum (the q offset).
      const __m512i pairs =
          _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.scales[s])));
      const __m512i off = _mm512_mullo_epi16(pairs, _mm512_set1_epi16(-32));
      for (int t = 0; t < NT; ++t)
        sacc[t] = _mm512_dpwssd_epi32(sacc[t], off, bcast32(x[t * n_sb + sb].bsums + 2 * s));
      const __m512i sc_lo = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);  // sc[2s]
      const __m512i sc_hi = _mm512_srai_epi32(pairs, 16);                         // sc[2s+1]
      __m512i ia[NT], ib[NT];
      for (int t = 0; t < NT; ++t) ia[t] = ib[t] = _mm512_setzero_si512();
      const __m512i h01 = _mm512_load_si512(b.qh[s][0]);
      const __m512i h23 = _mm512_load_si512(b.qh[s][1]);
      for (int p = 0; p < 4; ++p) {
        const __m512i c = _mm512_load_si512(b.ql[s][p]);
        const __m512i h = p < 2 ? h01 : h23;
        // Top bits of this line's low / high-nibble values moved to bits 4-5 (16-bit shifts move bits
        // across bytes, but only bits a byte owns land in 4-5, and the mask keeps those).
        __m512i hl, hh;
        if ((p & 1) == 0) {
          hl = _mm512_and_si512(_mm512_slli_epi16(h, 4), m30);
          hh = _mm512_and_si512(_mm512_slli_epi16(h, 2), m30);
        } else {
          hl = _mm512_and_si512(h, m30);
          hh = _mm512_and_si512(_mm512_srli_epi16(h, 2), m30);
        }
        // (A & C) | B with A = nibbles, B = top bits, C = 0x0F: ternary-logic table 0xEC.
        const __m512i lo = _mm512_ternarylogic_epi32(c, hl, m4, 0xEC);
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(c, 4), hh, m4, 0xEC);
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * s + 4 * p;
          ia[t] = _mm512_dpbusd_epi32(ia[t], lo, bcast32(xq));
          ib[t] = _mm512_dpbusd_epi32(ib[t], hi, bcast32(xq + 16));
        }
      }
      for (int t = 0; t < NT; ++t) {
        sacc[t] = _mm512_add_epi32(
            sacc[t], _mm512_add_epi32(_mm512_mullo_epi32(ia[t], sc_lo), _mm512_mullo_epi32(ib[t], sc_hi)));
      }
    }
    const __m512 d = _mm512_load_ps(b.d);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sacc[t])),
                               _mm512_set1_ps(x[t * n_sb + sb].d), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(y + t * ldy, mask, acc[t]);
}

constexpr int kTokens = 4;  // tokens per tile

}  // namespace

void gemm_q4_K_avx512(const GemmArgs& a) {
  const auto* w = static_cast<const Q4KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __mmask16 mask = row_mask(a, g);
    const Q4KBlock* wg = w + g * a.n_sb;
    float* yg = a.y + g * kRows;
    int64_t t = 0;
    for (; t + kTokens <= a.n_tokens; t += kTokens) {
      q4_K_tile<kTokens>(wg, a.n_sb, a.x + t * a.n_sb, a.bs32 + t * a.n_sb * 8, yg + t * a.ldy, a.ldy, mask);
    }
    const auto* x = a.x + t * a.n_sb;
    const int16_t* bs = a.bs32 + t * a.n_sb * 8;
    switch (a.n_tokens - t) {
      case 1:
        q4_K_tile<1>(wg, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
        break;
      case 2:
        q4_K_tile<2>(wg, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
        break;
      case 3:
        q4_K_tile<3>(wg, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
        break;
      default:
        break;
    }
  }
}

void gemm_q6_K_avx512(const GemmArgs& a) {
  const auto* w = static_cast<const Q6KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __mmask16 mask = row_mask(a, g);
    const Q6KBlock* wg = w + g * a.n_sb;
    float* yg = a.y + g * kRows;
    int64_t t = 0;
    for (; t + kTokens <= a.n_tokens; t += kTokens) {
      q6_K_tile<kTokens>(wg, a.n_sb, a.x + t * a.n_sb, yg + t * a.ldy, a.ldy, mask);
    }
    const auto* x = a.x + t * a.n_sb;
    switch (a.n_tokens - t) {
      case 1:
        q6_K_tile<1>(wg, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
        break;
      case 2:
        q6_K_tile<2>(wg, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
        break;
      case 3:
        q6_K_tile<3>(wg, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
        break;
      default:
        break;
    }
  }
}

}  // namespace dllm::cpu::qgemm
