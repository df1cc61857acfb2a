// The tile GEMM over the AMX instructions (TileHw, cpu/kernels/tile_hw_amx.h). Compiled with the AMX
// flags (and the AVX-512 ones, for the vector code around the tiles); run only where
// isa_supported(Isa::kAmx).
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once the conversions inline (a known false positive, as in qgemm_avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/qgemm_tiles_kernel.h"
#include "cpu/kernels/qgemm_tiles_scaled.h"
#include "cpu/kernels/tile_hw_amx.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {
using tiles::Dp;
using tiles::TileHw;

void gemm_q4_K_amx(const GemmArgs& a) {
  // A tile step costs the same for 1 token as for 16 (the unpacking of the group's planes most of
  // all), so few tokens run faster on zmm: 1408x2816 at 2 tokens, 0.122 ms on tiles against 0.077 on
  // avx512vnni, at 16 tokens 0.211 against 0.303 (qgemm_bench, docs/kernels.md); the two lines cross
  // near 7 tokens. Both kernels give the same bits.
  if (a.n_tokens < kTileMinTokens) return gemm_q4_K_avx512(a);
  tiles_scaled::gemm<TileHw, Q4KBlock>(a);
}
void gemm_q5_K_amx(const GemmArgs& a) {
  if (a.n_tokens < kTileMinTokens) return gemm_q5_K_avx512(a);  // as for Q4_K
  tiles_scaled::gemm<TileHw, Q5KBlock>(a);
}

void tile_dp_amx(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c) {
  tiles_kernel::single_dp<TileHw>(op, m, k_bytes, a, lda, b, c);
}

}  // namespace dllm::cpu::qgemm
