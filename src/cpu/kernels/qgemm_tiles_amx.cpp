// The tile GEMM over the AMX instructions (TileHw, cpu/kernels/tile_hw_amx.h). Compiled with the AMX
// flags (and the AVX-512 ones, for the vector code around the tiles); run only where
// isa_supported(Isa::kAmx).
#include <immintrin.h>

#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/qgemm_tiles_kernel.h"
#include "cpu/kernels/tile_hw_amx.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {
using tiles::Dp;
using tiles::TileHw;

void gemm_q4_K_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q4KFmt>(a);
}
void gemm_q5_K_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q5KFmt>(a);
}
void gemm_q6_K8_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q6KFmt>(a);
}
void gemm_q8_0_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q80Fmt>(a);
}

void tile_dp_amx(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c) {
  tiles_kernel::single_dp<TileHw>(op, m, k_bytes, a, lda, b, c);
}

}  // namespace dllm::cpu::qgemm
