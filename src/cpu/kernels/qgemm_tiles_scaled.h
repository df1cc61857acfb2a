// Q4_K and Q5_K on AMX tiles with the sub-block scales inside B, written once over a tile unit U
// (cpu/kernels/tile_unit.h): TileHw (qgemm_tiles_amx.cpp) or TileEmu (qgemm_tiles_emu.cpp). Included
// only by those two files.
//
// Why (docs/kernels.md, "Intel AMX tiles"): a tile product sums over all of its K, but the 6-bit scale
// sc[j] changes every 32 values of K and per row, and sc * q (up to 63 x 15 = 945 for Q4_K, 63 x 31
// for Q5_K) is no byte. So each super-block of a group is unpacked once into two byte planes with the
// scale split as sc = 2^s sh + sl (Split below; Q4_K: s = 4, Q5_K: s = 3):
//   plane 0: sl * q,  plane 1: sh * q,  both at most 225 (Q4_K) or 217 (Q5_K): unsigned bytes.
// Then C0 = sum over a whole super-block (4 tdpbsud of K = 64) of x * (sl q), C1 likewise with sh, and
// S = 2^s C1 + C0 = sum_j sc[j] sum_{i in j} q_i x_i: exactly the int32 S of the scalar and AVX-512
// kernels (|S| < 2^31, docs/kernels.md "Arithmetic"), without a tile store per sub-block. The f32
// step per super-block is the AVX-512 kernels': y += d_x (d S - dmin M), M = sum_j m[j] bs32[j].
//
// Work step: one 16-row group (its planes in tmm0, tmm1) x up to 2 token tiles (A in tmm2, tmm3),
// C of token tile s and plane p in tmm4 + 2 s + p; each A and B load feeds two tdpbsud.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/tile_unit.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm::tiles_scaled {

using tiles::Dp;
using tiles::tmm_a;
using tiles::tmm_b;
using tiles::tmm_c;

constexpr int kTok = 16;  ///< tokens per A / C tile
constexpr int64_t kPlaneSb =
    2 * 8 * 8 * 64;            ///< plane bytes per super-block: 2 planes x 8 sub-blocks x 8 lines
constexpr int64_t kAhead = 4;  ///< super-blocks between a prefetch and the unpacking of that block

/// How a format's 6-bit scale splits: sc = 2^kShift sh + sl with sl = sc & (2^kShift - 1), sh = sc >>
/// kShift, so that both sl q and sh q are bytes: Q4_K (q <= 15) 16 sh + sl, both products <= 225 and
/// 45; Q5_K (q <= 31) 8 sh + sl, both <= 7 x 31 = 217. S = 2^kShift C1 + C0.
template <class Block>
struct Split;
template <>
struct Split<Q4KBlock> {
  static constexpr int kShift = 4;
};
template <>
struct Split<Q5KBlock> {
  static constexpr int kShift = 3;
};

#if defined(__AVX512BW__)
/// The two scale vectors of sub-block j for vpmullw: lane r's 16-bit halves both hold row r's sl
/// (w[0]) or sh (w[1]).
template <int Shift>
inline void split_scales(const uint8_t* scales_j, __m512i w[2]) {
  const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales_j)));
  const __m512i s0 = _mm512_and_si512(sc, _mm512_set1_epi32((1 << Shift) - 1));
  const __m512i s1 = _mm512_srli_epi32(sc, Shift);
  w[0] = _mm512_or_si512(s0, _mm512_slli_epi32(s0, 16));
  w[1] = _mm512_or_si512(s1, _mm512_slli_epi32(s1, 16));
}
#endif

/// The scale-multiplied bytes of one group (n_sb super-blocks): plane[(((b * 2 + h) * 8 + j) * 8 + p) * 64
/// + 4 r + i] = s_h(r, j) * q[32 j + 4 p + i] of row r in super-block b, s_0 = sc & 15, s_1 = sc >> 4
/// (lines p < 4 from the low nibbles of qs[j][p], p >= 4 from the high nibbles of qs[j][p - 4]). So
/// plane h of the K = 64 values 64 c.. of super-block b is 16 consecutive lines: one B tile.
inline void unpack_scaled(const Q4KBlock* blk, int64_t n_sb, uint8_t* plane) {
  for (int64_t b = 0; b < n_sb; ++b) {
    uint8_t* out = plane + b * kPlaneSb;
    for (int j = 0; j < 8; ++j) {
#if defined(__AVX512BW__)
      // Per 16-bit lane the two bytes of one row times that row's scale: q <= 15 and s <= 15, so the
      // low byte's product stays below 256 and never carries into the high byte.
      __m512i w[2];
      split_scales<Split<Q4KBlock>::kShift>(blk[b].scales[j], w);
      const __m512i w0 = w[0], w1 = w[1];
      const __m512i nib = _mm512_set1_epi8(15);
      for (int p = 0; p < 4; ++p) {
        const __m512i v = _mm512_load_si512(blk[b].qs[j][p]);
        const __m512i lo = _mm512_and_si512(v, nib);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        uint8_t* o0 = out + (0 * 8 + j) * 8 * 64;
        uint8_t* o1 = out + (1 * 8 + j) * 8 * 64;
        _mm512_store_si512(o0 + p * 64, _mm512_mullo_epi16(lo, w0));
        _mm512_store_si512(o0 + (p + 4) * 64, _mm512_mullo_epi16(hi, w0));
        _mm512_store_si512(o1 + p * 64, _mm512_mullo_epi16(lo, w1));
        _mm512_store_si512(o1 + (p + 4) * 64, _mm512_mullo_epi16(hi, w1));
      }
#else
      for (int p = 0; p < 4; ++p) {
        for (int r = 0; r < kRows; ++r) {
          const int sc = blk[b].scales[j][r];
          const int s[2] = {sc & 15, sc >> 4};
          for (int i = 0; i < 4; ++i) {
            const int q = blk[b].qs[j][p][r][i];
            for (int h = 0; h < 2; ++h) {
              uint8_t* o = out + (h * 8 + j) * 8 * 64;
              o[p * 64 + 4 * r + i] = uint8_t(s[h] * (q & 15));
              o[(p + 4) * 64 + 4 * r + i] = uint8_t(s[h] * (q >> 4));
            }
          }
        }
      }
#endif
    }
  }
}

/// The same planes for Q5_K: its bytes are already laid out as the planes' lines (Q5KBlock::q[j][p]:
/// value 32 j + 4 p + i of row r at 4 r + i), so each line is multiplied by sl and by sh.
inline void unpack_scaled(const Q5KBlock* blk, int64_t n_sb, uint8_t* plane) {
  for (int64_t b = 0; b < n_sb; ++b) {
    uint8_t* out = plane + b * kPlaneSb;
    for (int j = 0; j < 8; ++j) {
      uint8_t* o0 = out + (0 * 8 + j) * 8 * 64;
      uint8_t* o1 = out + (1 * 8 + j) * 8 * 64;
#if defined(__AVX512BW__)
      // q <= 31 and s <= 7: the low byte's product stays below 256 (as for Q4_K above).
      __m512i w[2];
      split_scales<Split<Q5KBlock>::kShift>(blk[b].scales[j], w);
      for (int p = 0; p < 8; ++p) {
        const __m512i v = _mm512_load_si512(blk[b].q[j][p]);
        _mm512_store_si512(o0 + p * 64, _mm512_mullo_epi16(v, w[0]));
        _mm512_store_si512(o1 + p * 64, _mm512_mullo_epi16(v, w[1]));
      }
#else
      for (int p = 0; p < 8; ++p) {
        for (int r = 0; r < kRows; ++r) {
          const int sc = blk[b].scales[j][r];
          for (int i = 0; i < 4; ++i) {
            const int q = blk[b].q[j][p][r][i];
            o0[p * 64 + 4 * r + i] = uint8_t((sc & 7) * q);
            o1[p * 64 + 4 * r + i] = uint8_t((sc >> 3) * q);
          }
        }
      }
#endif
    }
  }
}

/// acc[t][r] += dx_t (d[r] S - dmin[r] M) for the m tokens of one token tile and super-block, with
/// S = 2^kShift c1 + c0 (the tile results, m x 16 int32 each) and M = sum_j m[j] bs32[j] of row r.
template <class Block>
inline void super_block_step(const Block& bk, const int32_t (*c0)[kRows], const int32_t (*c1)[kRows], int m,
                             const quant::block_q8_K* x, const int16_t* bs32, int64_t n_sb,
                             float (*acc)[kRows]) {
#if defined(__AVX512BW__)
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk.d)));
  const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk.dmin)));
  __m512i mins[4];  // (m[2q], m[2q + 1]) of row r as the int16 pair of lane r
  for (int q = 0; q < 4; ++q)
    mins[q] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bk.mins[q])));
  for (int t = 0; t < m; ++t) {
    const __m512i s = _mm512_add_epi32(_mm512_load_si512(c0[t]),
                                       _mm512_slli_epi32(_mm512_load_si512(c1[t]), Split<Block>::kShift));
    const int16_t* bs = bs32 + t * n_sb * 8;
    __m512i mm = _mm512_setzero_si512();
    for (int q = 0; q < 4; ++q) {
      int32_t pair;
      std::memcpy(&pair, bs + 2 * q, 4);
      mm = _mm512_dpwssd_epi32(mm, mins[q], _mm512_set1_epi32(pair));
    }
    // The AVX-512 kernels' operations in their order (qgemm_avx512.cpp, qgemm_bytes_ymm.h), so a
    // token's result does not depend on which of the two kernels its call ran (gemm_q4_K_amx and
    // gemm_q5_K_amx send few tokens there).
    const __m512 f = _mm512_fmsub_ps(d, _mm512_cvtepi32_ps(s), _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(mm)));
    _mm512_store_ps(acc[t], _mm512_fmadd_ps(f, _mm512_set1_ps(x[t * n_sb].d), _mm512_load_ps(acc[t])));
  }
#else
  float d[kRows], dmin[kRows];
  for (int r = 0; r < kRows; ++r) {
    d[r] = quant::fp16_to_fp32(bk.d[r]);
    dmin[r] = quant::fp16_to_fp32(bk.dmin[r]);
  }
  for (int t = 0; t < m; ++t) {
    const float dx = x[t * n_sb].d;
    const int16_t* bs = bs32 + t * n_sb * 8;
    for (int r = 0; r < kRows; ++r) {
      int32_t mm = 0;
      for (int q = 0; q < 4; ++q) mm += bk.mins[q][r][0] * bs[2 * q] + bk.mins[q][r][1] * bs[2 * q + 1];
      const int32_t s = c0[t][r] + (c1[t][r] << Split<Block>::kShift);
      acc[t][r] += dx * (d[r] * float(s) - dmin[r] * float(mm));
    }
  }
#endif
}

template <class U, int S, int P>
inline void dot() {
  U::template dp<Dp::kSU, tmm_c(S, P), tmm_a(S), tmm_b(P)>();
}

/// y = W x for the Q4_K (Block = Q4KBlock) or Q5_K (Q5KBlock) groups and tokens in `a` (GemmArgs as
/// for the other kernels of the format: x and bs32). Leaves the tile unit released.
template <class U, class Block>
void gemm(const GemmArgs& a) {
  const auto* w = static_cast<const Block*>(a.w);
  const int64_t n_sb = a.n_sb;
  const auto* x_bytes = reinterpret_cast<const uint8_t*>(a.x);
  constexpr int64_t x_block = sizeof(quant::block_q8_K);
  constexpr int64_t x_qs = offsetof(quant::block_q8_K, qs);
  const int64_t x_stride = n_sb * x_block;  // A's tile row stride: one activation row

  // Up to 32 tokens (one token step per group) each super-block is unpacked just before its tile
  // products, into one of two L1-resident slots; with more, the whole group once, for all its token
  // steps.
  const bool whole_group = a.n_tokens > 2 * kTok;
  thread_local std::vector<uint8_t> plane_buf;  // the planes, 64-byte aligned below
  plane_buf.resize(size_t((whole_group ? n_sb : 2) * kPlaneSb + 63));
  uint8_t* const plane =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(plane_buf.data()) + 63) & ~uintptr_t(63));

  const int64_t blocks_end = std::max(a.g_end, a.n_groups) * n_sb;
  alignas(64) int32_t c[2][2][kTok][kRows];  // [token tile][plane]
  alignas(64) float acc[2][kTok][kRows];
  tiles::StepConfig<U> steps;

  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    const Block* wg = w + g * n_sb;
    if (whole_group) unpack_scaled(wg, n_sb, plane);
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 2 * kTok) {
      const int m[2] = {int(std::min<int64_t>(kTok, a.n_tokens - t0)),
                        int(std::clamp<int64_t>(a.n_tokens - t0 - kTok, 0, kTok))};
      const int ns = m[1] > 0 ? 2 : 1;
      steps.load(ns, m, 2, 64);
      std::memset(acc, 0, sizeof acc);
      const uint8_t* a0 = x_bytes + t0 * x_stride + x_qs;
      const uint8_t* a1 = a0 + kTok * x_stride;
      for (int64_t b = 0; b < n_sb; ++b) {
        U::template zero<tmm_c(0, 0)>();
        U::template zero<tmm_c(0, 1)>();
        if (ns > 1) {
          U::template zero<tmm_c(1, 0)>();
          U::template zero<tmm_c(1, 1)>();
        }
        uint8_t* pb = plane + (whole_group ? b : b % 2) * kPlaneSb;
        if (!whole_group) {
          // The super-block kAhead ahead into L2 (past g_end too, up to the matrix's last group: the
          // thread's next work item usually starts there), so the unpacking does not wait on memory.
          const int64_t next = (g * n_sb + b) + kAhead;
          if (next < blocks_end) {
            const char* pf = reinterpret_cast<const char*>(w + next);
            for (int l = 0; l < int(sizeof(Block)) / 64; ++l) __builtin_prefetch(pf + 64 * l, 0, 2);
          }
          unpack_scaled(wg + b, 1, pb);
        }
        for (int k = 0; k < 4; ++k) {  // K = 64 values 64 k.. of the super-block
          U::template load<tmm_b(0)>(pb + k * 16 * 64, 64);
          U::template load<tmm_b(1)>(pb + (8 + 2 * k) * 8 * 64, 64);
          U::template load<tmm_a(0)>(a0 + b * x_block + 64 * k, x_stride);
          dot<U, 0, 0>();
          dot<U, 0, 1>();
          if (ns > 1) {
            U::template load<tmm_a(1)>(a1 + b * x_block + 64 * k, x_stride);
            dot<U, 1, 0>();
            dot<U, 1, 1>();
          }
        }
        for (int s = 0; s < ns; ++s) {
          if (s == 0) {
            U::template store<tmm_c(0, 0)>(c[0][0], kRows * 4);
            U::template store<tmm_c(0, 1)>(c[0][1], kRows * 4);
          } else {
            U::template store<tmm_c(1, 0)>(c[1][0], kRows * 4);
            U::template store<tmm_c(1, 1)>(c[1][1], kRows * 4);
          }
          const int64_t tok = t0 + s * kTok;
          super_block_step(wg[b], c[s][0], c[s][1], m[s], a.x + tok * n_sb + b, a.bs32 + (tok * n_sb + b) * 8,
                           n_sb, acc[s]);
        }
      }
      for (int s = 0; s < ns; ++s) {
        for (int t = 0; t < m[s]; ++t) {
          float* yt = a.y + (t0 + s * kTok + t) * a.ldy;
          for (int r = 0; r < kRows; ++r) {
            const int64_t o = g * kRows + r;
            if (o >= a.o_begin && o < a.o_end) yt[o] = acc[s][t][r];
          }
        }
      }
    }
  }
  steps.release();
}

}  // namespace dllm::cpu::qgemm::tiles_scaled
