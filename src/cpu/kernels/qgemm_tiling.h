// What the SIMD GEMM drivers share (qgemm_zmm.h, qgemm_ymm.h, qgemm_bytes_ymm.h): the L2
// prefetch of the next weights spread over a group's token tiles, and the cut of the tokens into
// tiles (and the loop over them). Included only by those ISA files; everything sits in an anonymous
// namespace so that copies compiled with different ISA flags never meet at link time.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

namespace dllm::cpu::qgemm {
namespace {

/// Prefetches [p, p + bytes) into L2 in slices, one slice per token tile: the next group's weights
/// arrive while this group's tiles run. A group is read from memory once and then reused from L2 by
/// every token tile; without this, its first tile waits on DRAM. Each tile takes its slice and issues
/// it a few lines per super-block of its own loop (Span::step): a burst of the whole slice (~30 lines
/// of DRAM) before the tile stalled on the miss queue, ~1.6% of the AVX-512 GEMM's perf samples.
struct Prefetcher {
  const char* p = nullptr;
  int64_t bytes = 0, slice = 0;
  /// Prefetch `bytes` from `from`, spread over `tiles` calls of take().
  Prefetcher(const void* from, int64_t n_bytes, int64_t tiles)
      : p(static_cast<const char*>(from)),
        bytes(n_bytes),
        slice((n_bytes / std::max<int64_t>(1, tiles) + 127) / 64 * 64) {}
  /// One tile's share: `lines` cache lines from p.
  struct Span {
    const char* p = nullptr;
    int64_t lines = 0;
    /// Prefetches lines i * per .. (i + 1) * per (step i of a loop; per from per_step).
    void step(int64_t i, int64_t per) const {
      const int64_t end = std::min(lines, (i + 1) * per);
      for (int64_t l = i * per; l < end; ++l) _mm_prefetch(p + 64 * l, _MM_HINT_T1);
    }
    /// Lines per step to cover the span in n steps.
    int64_t per_step(int64_t n) const { return (lines + n - 1) / std::max<int64_t>(1, n); }
  };
  /// The next tile's slice (empty once everything is handed out).
  Span take() {
    const int64_t n = std::min(slice, bytes);
    const Span s{p, (n + 63) / 64};
    p += n;
    bytes -= n;
    return s;
  }
};

/// n tokens as n4 tiles of 4, then n3 tiles of 3, then one tile of `rest` (0-2) tokens: the remainder
/// goes in 3-token tiles where the count allows (141 = 33 x 4 + 3 x 3), because a 1- or 2-token tile
/// still unpacks every weight line and pays the per-chain costs for a quarter or half of the
/// products. rest is nonzero only when n < 6 (rest 2) or n < 9 (rest 1).
struct TokenSplit {
  int64_t n4 = 0, n3 = 0, rest = 0;
  int64_t tiles() const { return n4 + n3 + (rest > 0); }
};
inline TokenSplit split_tokens(int64_t n) {
  const int64_t r = n % 4;
  TokenSplit s;
  s.n3 = r == 3 ? 1 : (r == 2 && n >= 6) ? 2 : (r == 1 && n >= 9) ? 3 : 0;
  s.n4 = (n - 3 * s.n3) / 4;
  s.rest = n - 4 * s.n4 - 3 * s.n3;
  return s;
}

// Runs tile.template operator()<NT>(first token, prefetch span) over the token tiles of
// split_tokens(n): tiles of 4, then of 3, then one of the 1-2 left; each takes a prefetch slice.
template <class Tile>
void for_token_tiles(int64_t n, Prefetcher& pf, Tile&& tile) {
  const TokenSplit ts = split_tokens(n);
  int64_t t = 0;
  for (int64_t i = 0; i < ts.n4; ++i, t += 4) tile.template operator()<4>(t, pf.take());
  for (int64_t i = 0; i < ts.n3; ++i, t += 3) tile.template operator()<3>(t, pf.take());
  const Prefetcher::Span rest = pf.take();
  switch (ts.rest) {
    case 1:
      tile.template operator()<1>(t, rest);
      break;
    case 2:
      tile.template operator()<2>(t, rest);
      break;
    default:
      rest.step(0, rest.lines);
      break;
  }
}

}  // namespace
}  // namespace dllm::cpu::qgemm
