// The AVX-512 VNNI path's Q8_0, Q5_0 and Q5_K kernels (compiled with -mavx512f/bw/vl/dq/vnni).
//
// Q8_0 (Q80Block) and Q5_0 (Q50Block): zmm kernels. A 64-byte line Q80Block::qs[p] is one zmm
// vpdpbusd operand (16 rows x 4 bytes), so the tile is that of the Q4_K / Q6_K kernels
// (qgemm_avx512.cpp): 32 rows (two groups) x 4 tokens, each activation broadcast feeding both groups;
// a lone last group runs the same code with one group, the token remainder goes in 3-token tiles where
// the count allows, and the next pair's weights are prefetched a slice per token tile
// (cpu/kernels/qgemm_zmm.h). Per block, lines 0..3 and 4..7 accumulate in separate int32 chains (16
// of 4 vpdpbusd each), added before the f32 step, so that vpdpbusd's latency is covered.
// The arithmetic is the ymm kernels' (qgemm_bytes_ymm.h, docs/kernels.md), lane for lane: the
// activations enter as x + 128 (u8, GemmArgs::xu8), each block's sum starts at -128 * sum(q)
// (Q80Block::sum), so it ends at the exact int32 sum x q, and then per block acc = fma(float(sum),
// d_w * d_x, acc) in the same order: the results are the ymm kernels' bits (tested). The activation
// scales d_x are converted to f32 once per call.
// Q5_0: the lines decoded in registers to the int8 q - 16 of the Q80Block lines (the nibble, minus 16
// where the inverted bit 4 is set: vptestmb on nh and a masked vpsubb); with more than one token tile a
// group pair is decoded once into Q80Block form (L1), which the tiles load.
//
// Q5_K: the ymm VNNI body of qgemm_bytes_ymm.h, its vpdpbusd / vpdpwssd EVEX-encoded on ymm (the
// attention projections of mixture-of-experts files, a small share of a step), so what runs here is
// what the emulated-VNNI tests run (qgemm_vnniemu_avx2.cpp) on machines without VNNI.
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once these inline into the tiles (a known false positive); nothing here is.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstddef>
#include <type_traits>
#include <vector>

#include "cpu/kernels/qgemm_bytes_ymm.h"
#include "cpu/kernels/qgemm_zmm.h"

namespace dllm::cpu::qgemm {
namespace {

// Lines p and p + 4 (values 4p..4p+3 and 16+4p..16+4p+3 of the 16 rows, p = 0..3) of a block as
// int8 weights: Q80Block::qs as loaded; a Q50Block's the same bytes decoded from ql[p] (its low and
// high nibbles) and nh (bits p and p + 4).
struct LinePair {
  __m512i lo, hi;
};
inline LinePair weight_lines_zmm(const Q80Block& b, int p) {
  return {_mm512_load_si512(b.qs[p]), _mm512_load_si512(b.qs[p + 4])};
}
inline LinePair weight_lines_zmm(const Q50Block& b, int p) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
  const __m512i ql = _mm512_load_si512(b.ql[p]), nh = _mm512_load_si512(b.nh);
  const __m512i lo = _mm512_and_si512(ql, m4), hi = _mm512_and_si512(_mm512_srli_epi16(ql, 4), m4);
  // q - 16 = nibble - 16 * (1 - bit 4): 16 off where bit p (p + 4) of nh is set.
  const __mmask64 neg_lo = _mm512_test_epi8_mask(nh, _mm512_set1_epi8(char(1 << p)));
  const __mmask64 neg_hi = _mm512_test_epi8_mask(nh, _mm512_set1_epi8(char(16 << p)));
  return {_mm512_mask_sub_epi8(lo, neg_lo, lo, sixteen), _mm512_mask_sub_epi8(hi, neg_hi, hi, sixteen)};
}

// n Q50Blocks as the Q80Blocks holding the same int8 values, d and sum.
void decode_q5_0_zmm(const Q50Block* b, int64_t n, Q80Block* o) {
  for (int64_t i = 0; i < n; ++i) {
    for (int p = 0; p < 4; ++p) {
      const LinePair l = weight_lines_zmm(b[i], p);
      _mm512_store_si512(o[i].qs[p], l.lo);
      _mm512_store_si512(o[i].qs[p + 4], l.hi);
    }
    // d and sum: 64 bytes, the block's last line in both layouts.
    static_assert(offsetof(Q80Block, d) + 64 == sizeof(Q80Block) &&
                  offsetof(Q50Block, d) + 64 == sizeof(Q50Block));
    _mm512_store_si512(o[i].d, _mm512_load_si512(b[i].d));
  }
}

// NG groups (1 or 2, consecutive: group k at w + k * n_b) x NT tokens; dx / xu the first token's
// Q8_0 scales as f32 / bytes + 128 (token rows n_b blocks apart); y points at the first group's row 0.
template <int NG, int NT, class Block>
void q8_0_tile(const Block* w, int64_t n_b, const float* dx, const uint8_t* xu, float* y, int64_t ldy,
               const __mmask16* mask, Prefetcher::Span pf) {
  const int64_t pf_per = pf.per_step(n_b);
  __m512 acc[NT][NG];
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) acc[t][g] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n_b; ++b) {
    pf.step(b, pf_per);
    const Block* blk[NG];
    for (int g = 0; g < NG; ++g) blk[g] = w + g * n_b + b;
    // Two int32 chains per group and token, lines 0..3 (from -128 * sum(q) of each row: what the
    // +128 of the activations adds, taken off up front) and lines 4..7 (from 0), added at the end:
    // 4-deep chains, 2 x NT x NG of them, to cover vpdpbusd's latency (qgemm_avx512.cpp).
    __m512i il[NT][NG], ih[NT][NG];
    for (int g = 0; g < NG; ++g) {
      const __m512i sum =
          _mm512_cvtepi16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(blk[g]->sum)));
      const __m512i init = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7));
      for (int t = 0; t < NT; ++t) {
        il[t][g] = init;
        ih[t][g] = _mm512_setzero_si512();
      }
    }
    for (int p = 0; p < 4; ++p) {
      LinePair l[NG];
      for (int g = 0; g < NG; ++g) l[g] = weight_lines_zmm(*blk[g], p);
      for (int t = 0; t < NT; ++t) {
        const uint8_t* xb = xu + (t * n_b + b) * quant::kQK8_0 + 4 * p;
        const __m512i bl = bcast32_zmm(xb), bh = bcast32_zmm(xb + 16);
        for (int g = 0; g < NG; ++g) {
          il[t][g] = _mm512_dpbusd_epi32(il[t][g], bl, l[g].lo);
          ih[t][g] = _mm512_dpbusd_epi32(ih[t][g], bh, l[g].hi);
        }
      }
    }
    for (int g = 0; g < NG; ++g) {
      const __m512 dw = load_f16x16(blk[g]->d);
      for (int t = 0; t < NT; ++t) {
        const __m512i sum = _mm512_add_epi32(il[t][g], ih[t][g]);  // exact: the int32 sum x q
        acc[t][g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum),
                                    _mm512_mul_ps(dw, _mm512_set1_ps(dx[t * n_b + b])), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) _mm512_mask_storeu_ps(y + t * ldy + g * kRows, mask[g], acc[t][g]);
  }
}

// Q8_0 (Block = Q80Block) and Q5_0 (Q50Block): group pairs, then a lone group (for_group_pairs);
// tokens in tiles of 4, then of 3, then one of the 1-2 left (for_token_tiles).
template <class Block>
void gemm_q8_0_zmm(const GemmArgs& a) {
  const auto* w = static_cast<const Block*>(a.w);
  const int64_t tiles = split_tokens(a.n_tokens).tiles();
  // The activation scales as f32, once per call: the tiles broadcast them from memory into the
  // product d_w * d_x instead of converting each f16 per block and token.
  thread_local std::vector<float> dx;
  const size_t n_dx = size_t(a.n_tokens * a.n_sb);
  if (dx.size() < n_dx) dx.resize(n_dx);
  for (size_t i = 0; i < n_dx; ++i) dx[i] = _cvtsh_ss(a.x80[i].d);
  for_group_pairs<Block>(a, [&]<int NG>(int64_t g, const __mmask16* mask, Prefetcher& pf) {
    auto run_tiles = [&]<class B>(const B* wg) {
      for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
        q8_0_tile<NG, NT>(wg, a.n_sb, dx.data() + t * a.n_sb, a.xu8 + t * a.n_sb * quant::kQK8_0,
                          a.y + g * kRows + t * a.ldy, a.ldy, mask, span);
      });
    };
    if constexpr (std::is_same_v<Block, Q50Block>) {
      if (tiles > 1) {
        // More than one token tile: the pair decoded once into Q80Block form (576 bytes a block, 25 KB
        // for DiffusionGemma's 704 inputs: L1), which every tile loads, rather than decoded by each.
        thread_local std::vector<Q80Block> dec;
        if (dec.size() < size_t(NG * a.n_sb)) dec.resize(size_t(NG * a.n_sb));
        decode_q5_0_zmm(w + g * a.n_sb, NG * a.n_sb, dec.data());
        run_tiles(dec.data());
        return;
      }
    }
    run_tiles(w + g * a.n_sb);
  });
}

}  // namespace

void gemm_q8_0_avx512(const GemmArgs& a) {
  gemm_q8_0_zmm<Q80Block>(a);
}
void gemm_q5_0_avx512(const GemmArgs& a) {
  gemm_q8_0_zmm<Q50Block>(a);
}
void gemm_q5_K_avx512(const GemmArgs& a) {
  gemm_q5_K_ymm<YmmVnniEvex>(a);
}

}  // namespace dllm::cpu::qgemm
