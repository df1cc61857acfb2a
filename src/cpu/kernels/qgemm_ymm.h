// The 256-bit kernels shared by qgemm_avx2.cpp (vpmaddubsw + vpmaddwd), qgemm_avxvnni.cpp (VEX
// vpdpbusd / vpdpwssd) and the tests' emulated-VNNI instantiation (kernels/qgemm_vnniemu_avx2.cpp).
// The template parameter Dot (kernels/ymm_dot.h) supplies the two dot instructions; Dot::kVnni picks
// the VNNI or the AVX2 route. Included ONLY by ISA files, each compiled with its own flags; all of it
// sits in an anonymous namespace so the instantiations never meet at link time.
//
// A ymm holds 8 int32 lanes, so each 16-row group is two halves of 8 rows: half h reads bytes
// 32h..32h+31 of every 64-byte weight line (rows 8h..8h+7, 4 weights each) and the matching 8 entries
// of the scale arrays. A tile is NH halves (1 or 2: 8 or 16 rows) x NT tokens.
//
// Q4_K: 16 rows x 4 tokens. Each activation broadcast feeds both halves, and low and high nibbles
// (the same sub-block, so the same scale) share one chain per half and token: 8 independent vpdpbusd
// chains in 14 of the 16 ymm registers. Token counts that are not a multiple of 4 end in 3-token
// tiles (141 = 33 x 4 + 3 x 3), and the driver prefetches the next group's weights into L2 a slice
// per token tile (as the AVX-512 path does), so each group comes from DRAM once, early.
// Q6_K, VNNI routes (Q6KBlock): 8 rows x 4 tokens, then one tile of the 1-3 tokens left, with the
// same prefetch (spread over both halves' tiles). Its low and high nibbles are two sub-blocks with
// their own scales, so 16 rows would need 16 accumulators: all the registers.
// Q6_K, AVX2 (Q6K8Block, one byte per weight): 16 rows x 4 tokens like Q4_K, no unpacking.
//
// AVX2 has no u8 x s8 -> s32 instruction: vpmaddubsw makes s16 sums of 2 products (saturating, but
// Q4_K 2 * 15 * 128 = 3840 and Q6K8Block's 2 * 255 * 32 = 16320 never reach 32767), several of those
// are added in s16 (Q4_K: 8 per sub-block, <= 30720; Q6_K: 2, <= 32640), and vpmaddwd with the
// sub-block scale duplicated in both halves of each lane gives sc * sum in s32.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_tiling.h"
#include "cpu/kernels/ymm_dot.h"

namespace dllm::cpu::qgemm {
namespace {

// Keeps v in a register at this point of the program. The AVX2 routes add vpmaddubsw results in s16
// (vpaddw); integer adds are associative, so GCC re-associates a sub-block's 8 adds into a tree,
// computes all 64 products of a tile first and spills most of them to the stack (the Q4_K tile ran
// at 0.22 of the vpmaddubsw peak that way, bench/results/qgemm-vm-20261201T224317Z.json). An empty asm with v
// as an in-out register operand is opaque to the optimizer, so each add stays where the source puts it. The
// VNNI routes accumulate inside vpdpbusd and do not need it.
inline void pin(__m256i& v) {
  asm("" : "+x"(v));
}

inline __m256i bcast32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
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

// Q4_K: halves h0..h0+NH-1 of one group (w: its super-blocks) x NT tokens starting at x (token rows
// n_sb blocks apart), bs32 the matching activation sums of 32; y points at row 8 h0 of the group.
template <class Dot, int NH, int NT>
void q4_K_tile(const Q4KBlock* w, int h0, int64_t n_sb, const quant::block_q8_K* x, const int16_t* bs32,
               float* y, int64_t ldy, const __m256i* mask, Prefetcher::Span pf) {
  constexpr bool kVnni = Dot::kVnni;
  const int64_t pf_per = pf.per_step(n_sb);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NT][NH];
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q4KBlock& b = w[sb];
    __m256i sacc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) sacc[t][h] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      // One chain per half and token: low nibbles (activations 32j+4p..) and high nibbles
      // (32j+16+4p..) are the same sub-block j. AVX2: s16 sums of 8 vpmaddubsw, |sum| <= 8 * 3840.
      __m256i is[NT][NH];
      for (int t = 0; t < NT; ++t) {
        for (int h = 0; h < NH; ++h) is[t][h] = _mm256_setzero_si256();
      }
      // Unrolled: with pin() GCC kept this as a 4-trip loop (the commit that added the pragma has
      // its A/B).
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        __m256i lo[NH];
        for (int h = 0; h < NH; ++h) {
          lo[h] = _mm256_and_si256(
              _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qs[j][p][8 * (h0 + h)][0])), m4);
        }
        for (int t = 0; t < NT; ++t) {
          const __m256i bx = bcast32(x[t * n_sb + sb].qs + 32 * j + 4 * p);
          for (int h = 0; h < NH; ++h) {
            if constexpr (kVnni) {
              is[t][h] = Dot::u8s8(is[t][h], lo[h], bx);
            } else {
              is[t][h] = _mm256_add_epi16(is[t][h], _mm256_maddubs_epi16(lo[h], bx));
              pin(is[t][h]);
            }
          }
        }
        __m256i hi[NH];
        for (int h = 0; h < NH; ++h) {
          hi[h] = _mm256_and_si256(
              _mm256_srli_epi16(
                  _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qs[j][p][8 * (h0 + h)][0])), 4),
              m4);
        }
        for (int t = 0; t < NT; ++t) {
          const __m256i bx = bcast32(x[t * n_sb + sb].qs + 32 * j + 16 + 4 * p);
          for (int h = 0; h < NH; ++h) {
            if constexpr (kVnni) {
              is[t][h] = Dot::u8s8(is[t][h], hi[h], bx);
            } else {
              is[t][h] = _mm256_add_epi16(is[t][h], _mm256_maddubs_epi16(hi[h], bx));
              pin(is[t][h]);
            }
          }
        }
      }
      for (int h = 0; h < NH; ++h) {
        const __m256i sc = _mm256_cvtepu8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&b.scales[j][8 * (h0 + h)])));
        if constexpr (kVnni) {
          for (int t = 0; t < NT; ++t)
            sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_mullo_epi32(is[t][h], sc));
        } else {
          const __m256i sc16 = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));  // (sc, sc) per lane
          for (int t = 0; t < NT; ++t)
            sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_madd_epi16(is[t][h], sc16));
        }
      }
    }
    // Min term M = sum_j m[j] * bs32[j], two sub-blocks per vpdpwssd / vpmaddwd (int16 pairs); after
    // the S loop so its accumulators do not hold registers through it.
    __m256i macc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) macc[t][h] = _mm256_setzero_si256();
    }
    for (int p = 0; p < 4; ++p) {
      __m256i mp[NH];
      for (int h = 0; h < NH; ++h) {
        mp[h] =
            _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.mins[p][8 * (h0 + h)])));
      }
      for (int t = 0; t < NT; ++t) {
        const __m256i bs = bcast32(bs32 + (t * n_sb + sb) * 8 + 2 * p);
        for (int h = 0; h < NH; ++h) macc[t][h] = Dot::s16(macc[t][h], mp[h], bs);
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.d[8 * (h0 + h)])));
      const __m256 dmin =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.dmin[8 * (h0 + h)])));
      for (int t = 0; t < NT; ++t) {
        const __m256 f = _mm256_fmsub_ps(d, _mm256_cvtepi32_ps(sacc[t][h]),
                                         _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(macc[t][h])));
        acc[t][h] = _mm256_fmadd_ps(f, _mm256_set1_ps(x[t * n_sb + sb].d), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) _mm256_maskstore_ps(y + t * ldy + 8 * h, mask[h], acc[t][h]);
  }
}

// Q6_K over Q6KBlock, VNNI routes: as q4_K_tile without bs32 (the -32 of q enters through the
// activation bsums). The AVX2 path multiplies the byte layout instead (q6_K8_tile_avx2).
template <class Dot, int NH, int NT>
void q6_K_tile(const Q6KBlock* w, int h0, int64_t n_sb, const quant::block_q8_K* x, float* y, int64_t ldy,
               const __m256i* mask, Prefetcher::Span pf) {
  static_assert(Dot::kVnni, "AVX2 runs Q6_K over Q6K8Block");
  const int64_t pf_per = pf.per_step(n_sb);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[NT][NH];
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q6KBlock& b = w[sb];
    __m256i sacc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) sacc[t][h] = _mm256_setzero_si256();
    }
    for (int s = 0; s < 8; ++s) {
      __m256i pairs[NH];
      for (int h = 0; h < NH; ++h) {
        pairs[h] = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[s][8 * (h0 + h)])));
        const __m256i off = _mm256_mullo_epi16(pairs[h], _mm256_set1_epi16(-32));  // -32 * (sc[2s], sc[2s+1])
        for (int t = 0; t < NT; ++t)
          sacc[t][h] = Dot::s16(sacc[t][h], off, bcast32(x[t * n_sb + sb].bsums + 2 * s));
      }
      __m256i ia[NT][NH], ib[NT][NH];  // sub-blocks 2s (low nibbles) and 2s + 1 (high nibbles)
      for (int t = 0; t < NT; ++t) {
        for (int h = 0; h < NH; ++h) ia[t][h] = ib[t][h] = _mm256_setzero_si256();
      }
      for (int p = 0; p < 4; ++p) {
        __m256i lo[NH], hi[NH];
        for (int h = 0; h < NH; ++h) {
          const __m256i c = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.ql[s][p][8 * (h0 + h)][0]));
          const __m256i hb =
              _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.qh[s][p / 2][8 * (h0 + h)][0]));
          __m256i hl, hh;
          if ((p & 1) == 0) {
            hl = _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30);
            hh = _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30);
          } else {
            hl = _mm256_and_si256(hb, m30);
            hh = _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30);
          }
          lo[h] = _mm256_or_si256(_mm256_and_si256(c, m4), hl);
          hi[h] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(c, 4), m4), hh);
        }
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * s + 4 * p;
          const __m256i bl = bcast32(xq), bh = bcast32(xq + 16);
          for (int h = 0; h < NH; ++h) {
            ia[t][h] = Dot::u8s8(ia[t][h], lo[h], bl);
            ib[t][h] = Dot::u8s8(ib[t][h], hi[h], bh);
          }
        }
      }
      for (int h = 0; h < NH; ++h) {
        const __m256i sc_lo = _mm256_srai_epi32(_mm256_slli_epi32(pairs[h], 16), 16);
        const __m256i sc_hi = _mm256_srai_epi32(pairs[h], 16);
        for (int t = 0; t < NT; ++t) {
          sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_add_epi32(_mm256_mullo_epi32(ia[t][h], sc_lo),
                                                                     _mm256_mullo_epi32(ib[t][h], sc_hi)));
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_loadu_ps(&b.d[8 * (h0 + h)]);
      for (int t = 0; t < NT; ++t) {
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sacc[t][h])),
                                    _mm256_set1_ps(x[t * n_sb + sb].d), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) _mm256_maskstore_ps(y + t * ldy + 8 * h, mask[h], acc[t][h]);
  }
}

// Q6_K over the byte layout (Q6K8Block), AVX2 route only: the weights q - 32 are vpmaddubsw's signed
// operand as loaded and the activations + 128 (GemmArgs::xu8) its unsigned one, so no line is unpacked
// (q6_K_tile spends ~8 instructions per line rebuilding the 6-bit values from two planes).
// |(x + 128)(q - 32)| <= 255 * 32 = 8160, so a vpmaddubsw pair sum is <= 16320 and two of them
// <= 32640 in s16: a sub-block's 4 lines are 2 s16 sums, each scaled into int32 by vpmaddwd with
// (sc, sc). What the +128 adds is the per-row constant corr, subtracted once per super-block (as the
// AVX-512 kernel over this layout, qgemm_avx512.cpp). Halves h0..h0+NH-1 of one group x NT tokens; xu
// points at the first token's bytes (token rows n_sb x 256 bytes apart).
template <int NH, int NT>
void q6_K8_tile_avx2(const Q6K8Block* w, int64_t n_sb, const quant::block_q8_K* x, const uint8_t* xu,
                     float* y, int64_t ldy, const __m256i* mask, Prefetcher::Span pf) {
  const int64_t pf_per = pf.per_step(n_sb);
  __m256 acc[NT][NH];
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q6K8Block& b = w[sb];
    __m256i sacc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) sacc[t][h] = _mm256_setzero_si256();
    }
    for (int s = 0; s < 8; ++s) {
      for (int k = 0; k < 2; ++k) {  // sub-block 2s + k
        __m256i sc[NH];
        for (int h = 0; h < NH; ++h) {
          const __m256i pairs =
              _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[s][8 * h])));
          sc[h] = k == 0 ? _mm256_blend_epi16(pairs, _mm256_slli_epi32(pairs, 16), 0xAA)   // (sc[2s], sc[2s])
                         : _mm256_blend_epi16(_mm256_srli_epi32(pairs, 16), pairs, 0xAA);  // (sc[2s+1], ..)
        }
        for (int q = 0; q < 2; ++q) {  // lines p = 2q and 2q + 1
          for (int t = 0; t < NT; ++t) {
            const uint8_t* xq = xu + (t * n_sb + sb) * quant::kQK_K + 32 * s + 16 * k + 8 * q;
            const __m256i b0 = bcast32(xq), b1 = bcast32(xq + 4);
            for (int h = 0; h < NH; ++h) {
              const __m256i w0 =
                  _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.q[s][2 * q][k][8 * h][0]));
              const __m256i w1 =
                  _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.q[s][2 * q + 1][k][8 * h][0]));
              const __m256i is = _mm256_add_epi16(_mm256_maddubs_epi16(b0, w0), _mm256_maddubs_epi16(b1, w1));
              sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_madd_epi16(is, sc[h]));
              pin(sacc[t][h]);
            }
          }
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_loadu_ps(&b.d[8 * h]);
      const __m256i corr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&b.corr[8 * h]));
      for (int t = 0; t < NT; ++t) {
        acc[t][h] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(sacc[t][h], corr))),
                                    _mm256_set1_ps(x[t * n_sb + sb].d), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) _mm256_maskstore_ps(y + t * ldy + 8 * h, mask[h], acc[t][h]);
  }
}

// ---------------------------------------------------------------------------------------------------
// Drivers.

// Q4_K, all tokens of one group (16-row tiles).
template <class Dot>
void q4_K_token_tiles(const Q4KBlock* wg, const GemmArgs& a, float* y0, const __m256i* mask, Prefetcher& pf) {
  const TokenSplit ts = split_tokens(a.n_tokens);
  auto bs_at = [&](int64_t t) { return a.bs32 + t * a.n_sb * 8; };
  int64_t t = 0;
  for (int64_t i = 0; i < ts.n4; ++i, t += 4) {
    q4_K_tile<Dot, 2, 4>(wg, 0, a.n_sb, a.x + t * a.n_sb, bs_at(t), y0 + t * a.ldy, a.ldy, mask, pf.take());
  }
  for (int64_t i = 0; i < ts.n3; ++i, t += 3) {
    q4_K_tile<Dot, 2, 3>(wg, 0, a.n_sb, a.x + t * a.n_sb, bs_at(t), y0 + t * a.ldy, a.ldy, mask, pf.take());
  }
  const Prefetcher::Span rest_pf = pf.take();
  const auto* x = a.x + t * a.n_sb;
  float* y = y0 + t * a.ldy;
  switch (ts.rest) {
    case 1:
      q4_K_tile<Dot, 2, 1>(wg, 0, a.n_sb, x, bs_at(t), y, a.ldy, mask, rest_pf);
      break;
    case 2:
      q4_K_tile<Dot, 2, 2>(wg, 0, a.n_sb, x, bs_at(t), y, a.ldy, mask, rest_pf);
      break;
    default:
      rest_pf.step(0, rest_pf.lines);
      break;
  }
}

// Q4_K: 16-row tiles; the next group's weights are prefetched during this group's token tiles, also
// past g_end (the thread's next work item usually starts there) but not past the matrix.
template <class Dot>
void gemm_q4_K_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Q4KBlock*>(a.w);
  const int64_t tiles = split_tokens(a.n_tokens).tiles();
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __m256i mask[2] = {half_mask(a, g, 0), half_mask(a, g, 1)};
    const Q4KBlock* wg = w + g * a.n_sb;
    Prefetcher pf(wg + a.n_sb, g + 1 < std::max(a.g_end, a.n_groups) ? a.n_sb * int64_t(sizeof(Q4KBlock)) : 0,
                  tiles);
    q4_K_token_tiles<Dot>(wg, a, a.y + g * kRows, mask, pf);
  }
}

// Q6_K: 8-row tiles of 4 tokens, then one tile of the 1-3 left (3-token remainder tiles as for Q4_K
// measured a few % slower here on the AVX2 path), and the next group prefetched as for Q4_K.
template <class Dot>
void gemm_q6_K_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Q6KBlock*>(a.w);
  const int64_t tiles = 2 * ((a.n_tokens + 3) / 4);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    Prefetcher pf(w + (g + 1) * a.n_sb,
                  g + 1 < std::max(a.g_end, a.n_groups) ? a.n_sb * int64_t(sizeof(Q6KBlock)) : 0, tiles);
    for (int h = 0; h < 2; ++h) {
      const __m256i mask = half_mask(a, g, h);
      if (_mm256_testz_si256(mask, mask)) continue;
      const Q6KBlock* wg = w + g * a.n_sb;
      float* yg = a.y + g * kRows + 8 * h;
      int64_t t = 0;
      for (; t + 4 <= a.n_tokens; t += 4) {
        q6_K_tile<Dot, 1, 4>(wg, h, a.n_sb, a.x + t * a.n_sb, yg + t * a.ldy, a.ldy, &mask, pf.take());
      }
      const auto* x = a.x + t * a.n_sb;
      const Prefetcher::Span rest_pf = pf.take();
      switch (a.n_tokens - t) {
        case 1:
          q6_K_tile<Dot, 1, 1>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, &mask, rest_pf);
          break;
        case 2:
          q6_K_tile<Dot, 1, 2>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, &mask, rest_pf);
          break;
        case 3:
          q6_K_tile<Dot, 1, 3>(wg, h, a.n_sb, x, yg + t * a.ldy, a.ldy, &mask, rest_pf);
          break;
        default:
          rest_pf.step(0, rest_pf.lines);
          break;
      }
    }
  }
}

// Q6_K over Q6K8Block (AVX2): 16-row tiles of 4 tokens, then 3, then the 1-2 left (split_tokens),
// and the next group prefetched as for Q4_K.
inline void gemm_q6_K8_ymm_avx2(const GemmArgs& a) {
  const auto* w = static_cast<const Q6K8Block*>(a.w);
  const TokenSplit ts = split_tokens(a.n_tokens);
  const int64_t row_bytes = a.n_sb * quant::kQK_K;  // xu8 bytes per token
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __m256i mask[2] = {half_mask(a, g, 0), half_mask(a, g, 1)};
    const Q6K8Block* wg = w + g * a.n_sb;
    Prefetcher pf(wg + a.n_sb,
                  g + 1 < std::max(a.g_end, a.n_groups) ? a.n_sb * int64_t(sizeof(Q6K8Block)) : 0,
                  ts.tiles());
    float* yg = a.y + g * kRows;
    for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
      q6_K8_tile_avx2<2, NT>(wg, a.n_sb, a.x + t * a.n_sb, a.xu8 + t * row_bytes, yg + t * a.ldy, a.ldy, mask,
                             span);
    });
  }
}

}  // namespace
}  // namespace dllm::cpu::qgemm
