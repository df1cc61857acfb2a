// What the zmm GEMM kernels share (qgemm_avx512.cpp: Q4_K, Q6_K; qgemm_bytes_avx512.cpp: Q8_0, Q5_0):
// the activation broadcast, the row masks, the f16 scales, and the driver that walks the row groups in
// pairs (a tile of 32 rows: two zmm of int32 lanes per token, each activation broadcast feeding both)
// and then a lone last group, with the next pair's weights prefetched into L2 a slice per token tile
// (cpu/kernels/qgemm_tiling.h). Included ONLY by files compiled with the AVX-512 flags; everything
// sits in an anonymous namespace.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_tiling.h"

namespace dllm::cpu::qgemm {
namespace {

// 4 bytes at p broadcast to every int32 lane of a zmm (qgemm_ymm.h bcast32: of a ymm).
inline __m512i bcast32_zmm(const void* p) {
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

// The 16 f16 at p (32-byte aligned) as f32.
inline __m512 load_f16x16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
}

// Runs pair.template operator()<NG>(g, mask, pf) over the groups [g_begin, g_end) of a matrix of
// Block groups (a.n_sb blocks each): NG = 2 for the pairs g, g + 1, then NG = 1 for a lone last group.
// mask[k]: the lanes of group g + k to store (row_mask). pf: the next pair's weights (also past
// g_end, up to the matrix's last group: the thread's next work item usually starts there), in one
// slice per token tile of a.n_tokens (for_token_tiles hands them out).
template <class Block, class Pair>
void for_group_pairs(const GemmArgs& a, Pair&& pair) {
  const auto* w = static_cast<const Block*>(a.w);
  const int64_t tiles = split_tokens(a.n_tokens).tiles();
  int64_t g = a.g_begin;
  for (; g + 2 <= a.g_end; g += 2) {
    const __mmask16 mask[2] = {row_mask(a, g), row_mask(a, g + 1)};
    const int64_t next = std::min<int64_t>(2, std::max(a.g_end, a.n_groups) - (g + 2));
    Prefetcher pf(w + (g + 2) * a.n_sb, next * a.n_sb * int64_t(sizeof(Block)), tiles);
    pair.template operator()<2>(g, mask, pf);
  }
  if (g < a.g_end) {
    const __mmask16 mask[1] = {row_mask(a, g)};
    Prefetcher pf(w, 0, tiles);
    pair.template operator()<1>(g, mask, pf);
  }
}

}  // namespace
}  // namespace dllm::cpu::qgemm
