// The 256-bit kernels shared by qgemm_avx2.cpp (vpmaddubsw + vpmaddwd) and qgemm_avxvnni.cpp (VEX
// vpdpbusd / vpdpwssd). Included ONLY by those two files, each compiled with its own ISA flags; all
// of it sits in an anonymous namespace so the two instantiations never meet at link time.
//
// A ymm holds 8 int32 lanes, so each 16-row group is done as two halves of 8 rows: half h reads bytes
// 32h..32h+31 of every 64-byte weight line (rows 8h..8h+7, 4 weights each) and the matching 8 entries
// of the scale arrays. Tile: 8 rows x 4 tokens.
//
// AVX2 has no u8 x s8 -> s32 instruction: vpmaddubsw makes s16 sums of 2 products (saturating, but
// Q4_K 2 * 15 * 128 = 3840 and Q6_K 2 * 63 * 128 = 16128 never reach 32767), several of those are
// added in s16 (Q4_K: 8 per sub-block, <= 30720; Q6_K: 2, <= 32256), and vpmaddwd with the sub-block
// scale duplicated in both halves of each lane gives sc * sum in s32: the scale comes for free.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/qgemm.h"

namespace dllm::cpu::qgemm {
namespace {

inline __m256i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// acc + sum over the 4 byte products of each int32 lane (u8 w, s8 x): only used when kVnni.
template <bool kVnni>
inline __m256i dot_u8s8(__m256i acc, __m256i w, __m256i x) {
  if constexpr (kVnni) return _mm256_dpbusd_avx_epi32(acc, w, x);
  return acc;  // not reached: the AVX2 kernels go through s16 sums
}

// acc + a.lo * b.lo + a.hi * b.hi per int32 lane (int16 pairs).
template <bool kVnni>
inline __m256i dot_s16(__m256i acc, __m256i a, __m256i b) {
  if constexpr (kVnni) return _mm256_dpwssd_avx_epi32(acc, a, b);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

// Lane mask (all ones = store) of rows 8h..8h+7 of group g inside [o_begin, o_end).
inline __m256i half_mask(const GemmArgs& a, int64_t g, int h) {
  const int64_t first = g * kRows + 8 * h;
  const __m256i rows = _mm256_add_epi32(_mm256_set1_epi32(int32_t(std::min<int64_t>(first, INT32_MAX - 8))),
                                        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i ge = _mm256_cmpgt_epi32(rows, _mm256_set1_epi32(int32_t(a.o_begin - 1)));
  const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(a.o_end)), rows);
  return _mm256_and_si256(ge, lt);
}

template <bool kVnni, int NT>
void q4_K_tile(const Q4KBlock* w, int h, int64_t n_sb, const quant::block_q8_K* x, const int16_t* bs32,
               float* y, int64_t ldy, __m256i mask) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    const Q4KBlock& b = w[sb];
    __m256i macc[NT], sacc[NT];
    for (int t = 0; t < NT; ++t) macc[t] = sacc[t] = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
      const __m256i mp =
          _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.mins[p][8 * h])));
      for (int t = 0; t < NT; ++t) {
        macc[t] = dot_s16<kVnni>(macc[t], mp, bcast32(bs32 + (t * n_sb + sb) * 8 + 2 * p));
      }
    }
    for (int j = 0; j < 8; ++j) {
      const __m256i sc =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&b.scales[j][8 * h])));
      __m256i ia[NT], ib[NT];
      for (int t = 0; t < NT; ++t) ia[t] = ib[t] = _mm256_setzero_si256();
      for (int p = 0; p < 4; ++p) {
        const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qs[j][p][8 * h][0]));
        const __m256i lo = _mm256_and_si256(c, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(c, 4), m4);
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * j + 4 * p;
          if constexpr (kVnni) {
            ia[t] = dot_u8s8<kVnni>(ia[t], lo, bcast32(xq));
            ib[t] = dot_u8s8<kVnni>(ib[t], hi, bcast32(xq + 16));
          } else {
            // s16 partial sums of the sub-block: 8 vpmaddubsw results, |sum| <= 8 * 3840.
            ia[t] = _mm256_add_epi16(ia[t], _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast32(xq)),
                                                             _mm256_maddubs_epi16(hi, bcast32(xq + 16))));
          }
        }
      }
      for (int t = 0; t < NT; ++t) {
        if constexpr (kVnni) {
          sacc[t] = _mm256_add_epi32(sacc[t], _mm256_mullo_epi32(_mm256_add_epi32(ia[t], ib[t]), sc));
        } else {
          const __m256i sc16 = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));  // (sc, sc) per lane
          sacc[t] = _mm256_add_epi32(sacc[t], _mm256_madd_epi16(ia[t], sc16));
        }
      }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.d[8 * h])));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.dmin[8 * h])));
    for (int t = 0; t < NT; ++t) {
      const __m256 f =
          _mm256_fmsub_ps(d, _mm256_cvtepi32_ps(sacc[t]), _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(macc[t])));
      acc[t] = _mm256_fmadd_ps(f, _mm256_set1_ps(x[t * n_sb + sb].d), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm256_maskstore_ps(y + t * ldy, mask, acc[t]);
}

template <bool kVnni, int NT>
void q6_K_tile(const Q6KBlock* w, int h, int64_t n_sb, const quant::block_q8_K* x, float* y, int64_t ldy,
               __m256i mask) {
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    const Q6KBlock& b = w[sb];
    __m256i sacc[NT];
    for (int t = 0; t < NT; ++t) sacc[t] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
      const __m256i pairs =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[s][8 * h])));
      const __m256i off = _mm256_mullo_epi16(pairs, _mm256_set1_epi16(-32));  // -32 * (sc[2s], sc[2s+1])
      for (int t = 0; t < NT; ++t)
        sacc[t] = dot_s16<kVnni>(sacc[t], off, bcast32(x[t * n_sb + sb].bsums + 2 * s));
      const __m256i h01 = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qh[s][0][8 * h][0]));
      const __m256i h23 = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qh[s][1][8 * h][0]));
      __m256i ia[NT], ib[NT];
      for (int t = 0; t < NT; ++t) ia[t] = ib[t] = _mm256_setzero_si256();
      for (int p = 0; p < 4; ++p) {
        const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.ql[s][p][8 * h][0]));
        const __m256i hb = p < 2 ? h01 : h23;
        __m256i hl, hh;
        if ((p & 1) == 0) {
          hl = _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30);
          hh = _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30);
        } else {
          hl = _mm256_and_si256(hb, m30);
          hh = _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30);
        }
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(c, m4), hl);
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), m4), hh);
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * s + 4 * p;
          if constexpr (kVnni) {
            ia[t] = dot_u8s8<kVnni>(ia[t], lo, bcast32(xq));
            ib[t] = dot_u8s8<kVnni>(ib[t], hi, bcast32(xq + 16));
          } else if ((p & 1) == 0) {
            ia[t] = _mm256_maddubs_epi16(lo, bcast32(xq));
            ib[t] = _mm256_maddubs_epi16(hi, bcast32(xq + 16));
          } else {
            // Two vpmaddubsw results per s16 sum: |sum| <= 2 * 16128 = 32256 (Q6_K q <= 63).
            ia[t] = _mm256_add_epi16(ia[t], _mm256_maddubs_epi16(lo, bcast32(xq)));
            ib[t] = _mm256_add_epi16(ib[t], _mm256_maddubs_epi16(hi, bcast32(xq + 16)));
          }
        }
        if constexpr (!kVnni) {
          if ((p & 1) == 1) {
            const __m256i sc_lo =
                _mm256_blend_epi16(pairs, _mm256_slli_epi32(pairs, 16), 0xAA);  // (sc[2s], sc[2s])
            const __m256i sc_hi =
                _mm256_blend_epi16(_mm256_srli_epi32(pairs, 16), pairs, 0xAA);  // (sc[2s+1], ..)
            for (int t = 0; t < NT; ++t) {
              sacc[t] = _mm256_add_epi32(sacc[t], _mm256_add_epi32(_mm256_madd_epi16(ia[t], sc_lo),
                                                                   _mm256_madd_epi16(ib[t], sc_hi)));
            }
          }
        }
      }
      if constexpr (kVnni) {
        const __m256i sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(pairs, 16), 16);
        const __m256i sc_hi = _mm256_srai_epi32(pairs, 16);
        for (int t = 0; t < NT; ++t) {
          sacc[t] = _mm256_add_epi32(
              sacc[t], _mm256_add_epi32(_mm256_mullo_epi32(ia[t], sc_lo), _mm256_mullo_epi32(ib[t], sc_hi)));
        }
      }
    }
    const __m256 d = _mm256_loadu_ps(&b.d[8 * h]);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sacc[t])),
                               _mm256_set1_ps(x[t * n_sb + sb].d), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm256_maskstore_ps(y + t * ldy, mask, acc[t]);
}

constexpr int kTokens = 4;

template <bool kVnni>
void gemm_q4_K_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Q4KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int h = 0; h < 2; ++h) {
      const __m256i mask = half_mask(a, g, h);
      if (_mm256_testz_si256(mask, mask)) continue;
      const Q4KBlock* wg = w + g * a.n_sb;
      float* yg = a.y + g * kRows + 8 * h;
      int64_t t = 0;
      for (; t + kTokens <= a.n_tokens; t += kTokens) {
        q4_K_tile<kVnni, kTokens>(wg, h, a.n_sb, a.x + t * a.n_sb, a.bs32 + t * a.n_sb * 8, yg + t * a.ldy,
                                  a.ldy, mask);
      }
      const auto* x = a.x + t * a.n_sb;
      const int16_t* bs = a.bs32 + t * a.n_sb * 8;
      switch (a.n_tokens - t) {
        case 1:
          q4_K_tile<kVnni, 1>(wg, h, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
          break;
        case 2:
          q4_K_tile<kVnni, 2>(wg, h, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
          break;
        case 3:
          q4_K_tile<kVnni, 3>(wg, h, a.n_sb, x, bs, yg + t * a.ldy, a.ldy, mask);
          break;
        default:
          break;
      }
    }
  }
}

template <bool kVnni>
void gemm_q6_K_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Q6KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int h = 0; h < 2; ++h) {
      const __m256i mask = half_mask(a, g, h);
      if (_mm256_testz_si256(mask, mask)) continue;
      const Q6KBlock* wg = w + g * a.n_sb;
      float* yg = a.y + g * kRows + 8 * h;
      int64_t t = 0;
      for (; t + kTokens <= a.n_tokens; t += kTokens) {
        q6_K_tile<kVnni, kTokens>(wg, h, a.n_sb, a.x + t * a.n_sb, yg + t * a.ldy, a.ldy, mask);
      }
      const auto* x = a.x + t * a.n_sb;
      switch (a.n_tokens - t) {
        case 1:
          q6_K_tile<kVnni, 1>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
          break;
        case 2:
          q6_K_tile<kVnni, 2>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
          break;
        case 3:
          q6_K_tile<kVnni, 3>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, mask);
          break;
        default:
          break;
      }
    }
  }
}

}  // namespace
}  // namespace dllm::cpu::qgemm
