// The 256-bit Q8_0, Q5_0 and Q5_K kernels over the layouts of cpu/kernels/qgemm_bytes.h, one template
// for every ymm path: Dot (kernels/ymm_dot.h) is YmmAvx2 (qgemm_bytes_avx2.cpp), YmmVnniVex
// (qgemm_bytes_avxvnni.cpp), YmmVnniEvex (qgemm_bytes_avx512.cpp: the AVX-512 VNNI path runs this ymm
// code for Q5_K; its Q8_0 / Q5_0 kernels are zmm) or YmmVnniEmu (qgemm_vnniemu_avx2.cpp, tests). Included
// ONLY by those ISA files; anonymous namespace.
//
// Tiles are 16 rows (both 8-row halves of a group, bytes 32h..32h+31 of each line) x 4 tokens, the
// token remainder in 3-token tiles where the count allows, as the Q4_K ymm kernel: each activation
// broadcast feeds both halves, 8 independent int32 chains. The driver prefetches the next group's
// weights into L2 a slice per token tile (cpu/kernels/qgemm_tiling.h).
//
// Q8_0 (int8 weights x int8 activations, per 32 values an f16 scale each):
//   VNNI: vpdpbusd multiplies unsigned by signed bytes, so the activations enter as x + 128 (u8,
//   GemmArgs::xu8) and each block's chain starts at -128 * sum(q) (Q80Block::sum): the int32 sum is
//   then exactly sum x q.
//   AVX2: vpmaddubsw(|q|, sign(x, q)) = the s16 sums of two q x (|q| <= 128, |x| <= 127 as
//   quantize_row_q8_0 makes them: <= 32512, no saturation), widened by vpmaddwd with ones.
//   Per block: y += (d_w * d_x) * float(sum) (the int32 sum is exact, |sum| < 2^19 converts exactly).
// Q5_0 (Q50Block): the Q8_0 tile on each line decoded to the int8 q - 16 in registers (the nibble
//   masked or shifted down, bit p of nh shifted to bit 4 and subtracted: 2 loads and 4-5 ops per
//   line and half), so the same int32 sums as the Q8_0 kernel on q5_0_to_q8_0's blocks. With more
//   than one token tile, a group is decoded once into Q80Block form and the tiles load that.
// Q5_K (u8 weights 0..31 x int8 Q8_K activations): the Q4_K tile of cpu/kernels/qgemm_ymm.h with each line
//   loaded instead of unpacked from nibbles: VNNI: vpdpbusd per line, the sub-block scale by vpmulld;
//   AVX2: vpmaddubsw s16 sums (2 * 31 * 128 = 7936 per product pair), 4 lines added in s16 (<= 31744),
//   then vpmaddwd by the scale pair, twice per sub-block. The min term as Q4_K (bs32, vpdpwssd).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/qgemm_tiling.h"
#include "cpu/kernels/qgemm_ymm.h"
#include "cpu/kernels/ymm_dot.h"

namespace dllm::cpu::qgemm {
namespace {

// ---------------------------------------------------------------------------------------------------
// Q8_0: one group (w: its n_b blocks) x NT tokens; x / xu the first token's blocks / bytes (token
// rows n_b blocks apart); y points at the group's row 0.

// Line p (values 4p..4p+3 of rows 8h..8h+7) of a block as int8 weights: Q80Block::qs as loaded; a
// Q50Block's the same bytes decoded: its nibble minus 16 where the inverted bit 4 (nh bit p) is set.
inline __m256i weight_line(const Q80Block& blk, int p, int h) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.qs[p][8 * h][0]));
}
inline __m256i weight_line(const Q50Block& blk, int p, int h) {
  __m256i ql = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.ql[p % 4][8 * h][0]));
  const __m256i nh = _mm256_load_si256(reinterpret_cast<const __m256i*>(&blk.nh[8 * h][0]));
  if (p >= 4) ql = _mm256_srli_epi16(ql, 4);
  // Bit p of each byte to bit 4 (16-bit shifts by at most 4: bit 4 of a byte comes from its own byte).
  const __m256i hb = p < 4 ? _mm256_slli_epi16(nh, 4 - p) : _mm256_srli_epi16(nh, p - 4);
  return _mm256_sub_epi8(_mm256_and_si256(ql, _mm256_set1_epi8(0x0F)),
                         _mm256_and_si256(hb, _mm256_set1_epi8(0x10)));
}

// A Q50Block's lines, d and sum as the Q80Block holding the same int8 values.
inline void decode_q5_0(const Q50Block& b, Q80Block& o) {
  for (int p = 0; p < 8; ++p) {
    for (int h = 0; h < 2; ++h)
      _mm256_store_si256(reinterpret_cast<__m256i*>(&o.qs[p][8 * h][0]), weight_line(b, p, h));
  }
  std::memcpy(o.d, b.d, sizeof o.d);
  std::memcpy(o.sum, b.sum, sizeof o.sum);
}

template <class Dot, int NT, class Block>
void q8_0_tile(const Block* w, int64_t n_b, const quant::block_q8_0* x, const uint8_t* xu, float* y,
               int64_t ldy, const __m256i* mask, Prefetcher::Span pf) {
  constexpr bool kVnni = Dot::kVnni;
  constexpr int NH = 2;
  const int64_t pf_per = pf.per_step(n_b);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[NT][NH];
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n_b; ++b) {
    pf.step(b, pf_per);
    const Block& blk = w[b];
    __m256i is[NT][NH];
    for (int h = 0; h < NH; ++h) {
      __m256i init = _mm256_setzero_si256();
      if constexpr (kVnni) {
        // -128 * sum(q) of each row: what the +128 of the activations adds, taken off up front.
        const __m256i sum =
            _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&blk.sum[8 * h])));
        init = _mm256_sub_epi32(init, _mm256_slli_epi32(sum, 7));
      }
      for (int t = 0; t < NT; ++t) is[t][h] = init;
    }
    for (int p = 0; p < 8; ++p) {
      __m256i wq[NH];
      for (int h = 0; h < NH; ++h) wq[h] = weight_line(blk, p, h);
      if constexpr (kVnni) {
        for (int t = 0; t < NT; ++t) {
          const __m256i bx = bcast32(xu + (t * n_b + b) * quant::kQK8_0 + 4 * p);
          for (int h = 0; h < NH; ++h) is[t][h] = Dot::u8s8(is[t][h], bx, wq[h]);
        }
      } else {
        __m256i wa[NH];
        for (int h = 0; h < NH; ++h) wa[h] = _mm256_abs_epi8(wq[h]);
        for (int t = 0; t < NT; ++t) {
          const __m256i bx = bcast32(x[t * n_b + b].qs + 4 * p);
          for (int h = 0; h < NH; ++h) {
            const __m256i pairs = _mm256_maddubs_epi16(wa[h], _mm256_sign_epi8(bx, wq[h]));
            is[t][h] = _mm256_add_epi32(is[t][h], _mm256_madd_epi16(pairs, ones));
            pin(is[t][h]);  // cpu/kernels/qgemm_ymm.h says why
          }
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&blk.d[8 * h])));
      for (int t = 0; t < NT; ++t) {
        const __m256 dx = _mm256_set1_ps(_cvtsh_ss(x[t * n_b + b].d));
        acc[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[t][h]), _mm256_mul_ps(dw, dx), acc[t][h]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) _mm256_maskstore_ps(y + t * ldy + 8 * h, mask[h], acc[t][h]);
  }
}

// Q8_0 (Block = Q80Block) and Q5_0 (Q50Block): the same tiles, the weight lines loaded or decoded.
template <class Dot, class Block = Q80Block>
void gemm_q8_0_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Block*>(a.w);
  const int64_t tiles = split_tokens(a.n_tokens).tiles();
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __m256i mask[2] = {half_mask(a, g, 0), half_mask(a, g, 1)};
    const Block* wg = w + g * a.n_sb;
    Prefetcher pf(wg + a.n_sb, g + 1 < std::max(a.g_end, a.n_groups) ? a.n_sb * int64_t(sizeof(Block)) : 0,
                  tiles);
    float* yg = a.y + g * kRows;
    auto run_tiles = [&]<class B>(const B* wb) {
      for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
        const uint8_t* xu = Dot::kVnni ? a.xu8 + t * a.n_sb * quant::kQK8_0 : nullptr;
        q8_0_tile<Dot, NT, B>(wb, a.n_sb, a.x80 + t * a.n_sb, xu, yg + t * a.ldy, a.ldy, mask, span);
      });
    };
    if constexpr (std::is_same_v<Block, Q50Block>) {
      if (tiles > 1) {
        // More than one token tile: the group decoded once into Q80Block form (L1 / L2: 576 bytes per
        // block), which every tile loads, rather than decoded again by each tile.
        thread_local std::vector<Q80Block> dec;
        if (dec.size() < size_t(a.n_sb)) dec.resize(size_t(a.n_sb));
        for (int64_t b = 0; b < a.n_sb; ++b) decode_q5_0(wg[b], dec[size_t(b)]);
        run_tiles(dec.data());
        continue;
      }
    }
    run_tiles(wg);
  }
}

// ---------------------------------------------------------------------------------------------------
// Q5_K: one group x NT tokens starting at x (token rows n_sb blocks apart), bs32 the matching
// activation sums of 32; y points at the group's row 0.

template <class Dot, int NT>
void q5_K_tile(const Q5KBlock* w, int64_t n_sb, const quant::block_q8_K* x, const int16_t* bs32, float* y,
               int64_t ldy, const __m256i* mask, Prefetcher::Span pf) {
  constexpr bool kVnni = Dot::kVnni;
  constexpr int NH = 2;
  const int64_t pf_per = pf.per_step(n_sb);
  __m256 acc[NT][NH];
  for (int t = 0; t < NT; ++t) {
    for (int h = 0; h < NH; ++h) acc[t][h] = _mm256_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q5KBlock& b = w[sb];
    __m256i sacc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) sacc[t][h] = _mm256_setzero_si256();
    }
    for (int j = 0; j < 8; ++j) {
      __m256i sc[NH];
      for (int h = 0; h < NH; ++h) {
        sc[h] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&b.scales[j][8 * h])));
        if constexpr (!kVnni)
          sc[h] = _mm256_or_si256(sc[h], _mm256_slli_epi32(sc[h], 16));  // (sc, sc) per lane
      }
      // VNNI: one int32 chain per half and token over the sub-block's 8 lines. AVX2: s16 sums of 4
      // vpmaddubsw (<= 4 * 7936), scaled into int32 by vpmaddwd after lines 3 and 7.
      __m256i is[NT][NH];
      for (int t = 0; t < NT; ++t) {
        for (int h = 0; h < NH; ++h) is[t][h] = _mm256_setzero_si256();
      }
      for (int p = 0; p < 8; ++p) {
        __m256i wq[NH];
        for (int h = 0; h < NH; ++h)
          wq[h] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&b.q[j][p][8 * h][0]));
        for (int t = 0; t < NT; ++t) {
          const __m256i bx = bcast32(x[t * n_sb + sb].qs + 32 * j + 4 * p);
          for (int h = 0; h < NH; ++h) {
            if constexpr (kVnni) {
              is[t][h] = Dot::u8s8(is[t][h], wq[h], bx);
            } else if (p % 4 == 0) {
              is[t][h] = _mm256_maddubs_epi16(wq[h], bx);
            } else {
              is[t][h] = _mm256_add_epi16(is[t][h], _mm256_maddubs_epi16(wq[h], bx));
            }
          }
        }
        if constexpr (!kVnni) {
          if (p % 4 == 3) {
            for (int t = 0; t < NT; ++t) {
              for (int h = 0; h < NH; ++h)
                sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_madd_epi16(is[t][h], sc[h]));
            }
          }
        }
      }
      if constexpr (kVnni) {
        for (int t = 0; t < NT; ++t) {
          for (int h = 0; h < NH; ++h)
            sacc[t][h] = _mm256_add_epi32(sacc[t][h], _mm256_mullo_epi32(is[t][h], sc[h]));
        }
      }
    }
    // Min term M = sum_j m[j] * bs32[j], two sub-blocks per vpdpwssd / vpmaddwd, as for Q4_K.
    __m256i macc[NT][NH];
    for (int t = 0; t < NT; ++t) {
      for (int h = 0; h < NH; ++h) macc[t][h] = _mm256_setzero_si256();
    }
    for (int p = 0; p < 4; ++p) {
      __m256i mp[NH];
      for (int h = 0; h < NH; ++h) {
        mp[h] = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.mins[p][8 * h])));
      }
      for (int t = 0; t < NT; ++t) {
        const __m256i bs = bcast32(bs32 + (t * n_sb + sb) * 8 + 2 * p);
        for (int h = 0; h < NH; ++h) macc[t][h] = Dot::s16(macc[t][h], mp[h], bs);
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.d[8 * h])));
      const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&b.dmin[8 * h])));
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

template <class Dot>
void gemm_q5_K_ymm(const GemmArgs& a) {
  const auto* w = static_cast<const Q5KBlock*>(a.w);
  const int64_t tiles = split_tokens(a.n_tokens).tiles();
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const __m256i mask[2] = {half_mask(a, g, 0), half_mask(a, g, 1)};
    const Q5KBlock* wg = w + g * a.n_sb;
    Prefetcher pf(wg + a.n_sb, g + 1 < std::max(a.g_end, a.n_groups) ? a.n_sb * int64_t(sizeof(Q5KBlock)) : 0,
                  tiles);
    float* yg = a.y + g * kRows;
    for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
      q5_K_tile<Dot, NT>(wg, a.n_sb, a.x + t * a.n_sb, a.bs32 + t * a.n_sb * 8, yg + t * a.ldy, a.ldy, mask,
                         span);
    });
  }
}

}  // namespace
}  // namespace dllm::cpu::qgemm
