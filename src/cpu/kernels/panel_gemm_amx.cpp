// panel_gemm (cpu/panel_gemm.h) on AMX-BF16 tiles. A binary16 value has an 11-bit significand and
// bf16 an 8-bit one, so each operand is split exactly into two bf16 parts, x = hi + lo (hi: x's top 16
// bits; lo = x - hi, at most 3 significant bits), and every product a * b = ah bh + ah bl + al bh +
// al bl is a sum of four bf16 products, each exact in f32. tdpbf16ps pairs two bf16 per f32 lane:
// A's tile holds (ah, ah) or (al, al) per id, B's (bh, bl) per id and column, so one instruction adds
// ah (bh + bl) and the next al (bh + bl). The sums are f32 with the tile unit's rounding, four terms
// per id instead of the vector path's one fused multiply-add, so the result differs from the vector
// paths by f32 rounding only (its bound: a sum of 4 k + 1 terms).
//
// Driver: as cpu/panel_gemm.cpp, columns are cut into blocks of whole 32-column pairs of tiles, each
// thread running its blocks over all the ids. Per panel of kAmxPanelIds ids the thread splits its
// columns of those B rows into tile rows, and A's rows (in place or gathered) into the two A forms;
// then every 32 x 32 block of C (four C tiles) runs over the panel's 16-id chunks. Edges (m or n not a
// multiple of 16, ids not of 16) go through zero-padded copies.
#include <immintrin.h>
#include <omp.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once the conversions inline (a known false positive, as in qgemm_avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu/kernels/panel_gemm_kernels.h"
#include "cpu/kernels/tile_hw_amx.h"
#include "cpu/panel_gemm.h"

namespace dllm::cpu::simd {
namespace {

using tiles::TileHw;

constexpr int kT = 16;                 // rows of a tile; f32 columns of a C tile; ids per tile chunk
constexpr int64_t kAmxPanelIds = 128;  // ids per panel: B's (kAmxPanelIds x 704 columns) in 360 KB

// Tiles: C blocks (rows r, columns c) in tmm4..7, B column tiles in tmm0..1, A row tiles in tmm2..3.
constexpr int kB0 = 0, kB1 = 1, kA0 = 2, kA1 = 3, kC00 = 4, kC01 = 5, kC10 = 6, kC11 = 7;

/// The top 16 bits of each f32 lane (a function: a namespace-scope vector constant would run
/// AVX-512 code at load time on every CPU).
inline __m512i hi_mask() {
  return _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
}

/// x (binary16 values in f32 lanes) -> the lo parts' f32 bits, exact: x - (x's top 16 bits).
inline __m512i lo_bits(__m512 x) {
  const __m512 hi = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), hi_mask()));
  return _mm512_castps_si512(_mm512_sub_ps(x, hi));
}

/// Per lane the bf16 pair (hi, lo) of x: hi in the low 16 bits (the first of the pair), lo above.
inline __m512i pair_hi_lo(__m512 x) {
  const __m512i bx = _mm512_castps_si512(x);
  return _mm512_or_si512(_mm512_srli_epi32(bx, 16), _mm512_and_si512(lo_bits(x), hi_mask()));
}

/// Per lane the bf16 of f32 bits `b` (their top 16 bits) twice, (v, v).
inline __m512i pair_twice(__m512i b) {
  return _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_and_si512(b, hi_mask()));
}

/// Per-thread buffers and the tile loop of one column block.
struct Block {
  const PanelGemm& g;
  int64_t m_tiles;  // ceil(m / 16)
  int64_t width;    // columns per block (whole tiles)
  std::vector<float> row;
  std::vector<uint32_t> b;         // [col tile t][id p][16 columns]: (bh, bl)
  std::vector<uint32_t> ahh, all;  // [row i][id p]: (ah, ah) and (al, al); rows past m are 0
  std::vector<float> gathered;
  alignas(64) float c_edge[2][2][kT * kT];

  Block(const PanelGemm& g_, int64_t width_)
      : g(g_),
        m_tiles((g_.m + kT - 1) / kT),
        width(width_),
        row(static_cast<size_t>(width_)),
        b(static_cast<size_t>(width_ * kAmxPanelIds)),
        ahh(static_cast<size_t>(m_tiles * kT * kAmxPanelIds)),
        all(ahh.size()) {}

  /// B's rows ids[0..kc) for columns j0..j0+nc into b, ids up to kcp (a multiple of 16) as 0.
  void split_b(const int32_t* ids, int64_t kc, int64_t kcp, int64_t j0, int64_t nc) {
    const int64_t n_tiles = (nc + kT - 1) / kT;
    for (int64_t p = 0; p < kc; ++p) {
      g.b_row(ids[p], j0, j0 + nc, row.data());
      for (int64_t t = 0; t < n_tiles; ++t) {
        const int64_t left = nc - t * kT;
        const __mmask16 mask = left >= kT ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(mask, row.data() + t * kT);
        const __m512 h = _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        _mm512_storeu_si512(&b[(t * kAmxPanelIds + p) * kT], pair_hi_lo(h));
      }
    }
    for (int64_t t = 0; t < n_tiles; ++t)
      std::memset(&b[(t * kAmxPanelIds + kc) * kT], 0, static_cast<size_t>((kcp - kc) * kT) * 4);
  }

  /// A's entries for ids[0..kc) into ahh, all; ids up to kcp as 0.
  void split_a(const int32_t* ids, int64_t kc, int64_t kcp) {
    int64_t lda = 0;
    const float* a = panel_a_rows(g, ids, kc, kAmxPanelIds, gathered, lda);
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t p = 0; p < kcp; p += kT) {
        const int64_t left = kc - p;
        const __mmask16 mask = left >= kT  ? __mmask16(0xFFFF)
                               : left <= 0 ? __mmask16(0)
                                           : __mmask16((1u << left) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(mask, a + i * lda + p);
        _mm512_storeu_si512(&ahh[i * kAmxPanelIds + p], pair_twice(_mm512_castps_si512(x)));
        _mm512_storeu_si512(&all[i * kAmxPanelIds + p], pair_twice(lo_bits(x)));
      }
    }
  }

  /// C[rows of tiles r0, r0 + 1][columns of tiles t0, t0 + 1 of the block at j0] += the panel's
  /// products (kcp ids); kTwoR, kTwoC: whether the second row / column tile exists.
  template <bool kTwoR, bool kTwoC>
  void c_block(int64_t r0, int64_t t0, int64_t j0, int64_t nc, int64_t kcp) {
    float* c[2][2];
    int64_t ldc[2][2];
    bool edge[2][2] = {};
    for (int dr = 0; dr < (kTwoR ? 2 : 1); ++dr)
      for (int dc = 0; dc < (kTwoC ? 2 : 1); ++dc) {
        const int64_t i0 = (r0 + dr) * kT, jc = (t0 + dc) * kT;
        const int64_t rows = std::min<int64_t>(kT, g.m - i0), cols = std::min<int64_t>(kT, nc - jc);
        c[dr][dc] = g.c + i0 * g.ldc + j0 + jc;
        ldc[dr][dc] = g.ldc * 4;
        if (rows == kT && cols == kT) continue;
        edge[dr][dc] = true;
        float* e = c_edge[dr][dc];
        std::memset(e, 0, sizeof(c_edge[dr][dc]));
        for (int64_t r = 0; r < rows; ++r) std::memcpy(e + r * kT, c[dr][dc] + r * g.ldc, cols * 4);
      }
    auto at = [&](int dr, int dc) -> float* { return edge[dr][dc] ? c_edge[dr][dc] : c[dr][dc]; };
    auto ld = [&](int dr, int dc) -> int64_t { return edge[dr][dc] ? kT * 4 : ldc[dr][dc]; };
    TileHw::load<kC00>(at(0, 0), ld(0, 0));
    if constexpr (kTwoC) TileHw::load<kC01>(at(0, 1), ld(0, 1));
    if constexpr (kTwoR) TileHw::load<kC10>(at(1, 0), ld(1, 0));
    if constexpr (kTwoR && kTwoC) TileHw::load<kC11>(at(1, 1), ld(1, 1));
    const int64_t lda = kAmxPanelIds * 4;
    for (int64_t q = 0; q < kcp; q += kT) {
      TileHw::load<kB0>(&b[(t0 * kAmxPanelIds + q) * kT], kT * 4);
      if constexpr (kTwoC) TileHw::load<kB1>(&b[((t0 + 1) * kAmxPanelIds + q) * kT], kT * 4);
      for (const std::vector<uint32_t>* a : {&ahh, &all}) {
        TileHw::load<kA0>(&(*a)[r0 * kT * kAmxPanelIds + q], lda);
        if constexpr (kTwoR) TileHw::load<kA1>(&(*a)[(r0 + 1) * kT * kAmxPanelIds + q], lda);
        TileHw::dp_bf16<kC00, kA0, kB0>();
        if constexpr (kTwoC) TileHw::dp_bf16<kC01, kA0, kB1>();
        if constexpr (kTwoR) TileHw::dp_bf16<kC10, kA1, kB0>();
        if constexpr (kTwoR && kTwoC) TileHw::dp_bf16<kC11, kA1, kB1>();
      }
    }
    TileHw::store<kC00>(at(0, 0), ld(0, 0));
    if constexpr (kTwoC) TileHw::store<kC01>(at(0, 1), ld(0, 1));
    if constexpr (kTwoR) TileHw::store<kC10>(at(1, 0), ld(1, 0));
    if constexpr (kTwoR && kTwoC) TileHw::store<kC11>(at(1, 1), ld(1, 1));
    for (int dr = 0; dr < (kTwoR ? 2 : 1); ++dr)
      for (int dc = 0; dc < (kTwoC ? 2 : 1); ++dc) {
        if (!edge[dr][dc]) continue;
        const int64_t i0 = (r0 + dr) * kT, jc = (t0 + dc) * kT;
        const int64_t rows = std::min<int64_t>(kT, g.m - i0), cols = std::min<int64_t>(kT, nc - jc);
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(c[dr][dc] + r * g.ldc, c_edge[dr][dc] + r * kT, cols * 4);
      }
  }

  void run(int64_t j0, int64_t nc) {
    const int64_t n_tiles = (nc + kT - 1) / kT;
    for (int64_t p0 = 0; p0 < g.k; p0 += kAmxPanelIds) {
      const int64_t kc = std::min(kAmxPanelIds, g.k - p0), kcp = (kc + kT - 1) / kT * kT;
      split_b(g.ids + p0, kc, kcp, j0, nc);
      split_a(g.ids + p0, kc, kcp);
      for (int64_t r0 = 0; r0 < m_tiles; r0 += 2) {
        const bool two_r = r0 + 1 < m_tiles;
        for (int64_t t0 = 0; t0 < n_tiles; t0 += 2) {
          const bool two_c = t0 + 1 < n_tiles;
          if (two_r && two_c)
            c_block<true, true>(r0, t0, j0, nc, kcp);
          else if (two_r)
            c_block<true, false>(r0, t0, j0, nc, kcp);
          else if (two_c)
            c_block<false, true>(r0, t0, j0, nc, kcp);
          else
            c_block<false, false>(r0, t0, j0, nc, kcp);
        }
      }
    }
  }
};

}  // namespace

void panel_gemm_amx_bf16(const PanelGemm& g, int n_threads) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return;
  const int threads = std::max(1, n_threads);
  const int64_t width = panel_block_width(g.n, threads, 2 * kT);  // whole pairs of C tiles
  const int64_t n_cblocks = (g.n + width - 1) / width;
#pragma omp parallel num_threads(threads)
  {
    tiles::TileConfig cfg;
    for (int t = 0; t < 8; ++t) cfg.set(t, kT, 64);
    TileHw::config(cfg);
    Block blk(g, width);
#pragma omp for schedule(static)
    for (int64_t cb = 0; cb < n_cblocks; ++cb) {
      const int64_t j0 = cb * width;
      blk.run(j0, std::min(width, g.n - j0));
    }
    TileHw::release();
  }
}

}  // namespace dllm::cpu::simd
