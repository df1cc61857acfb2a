// The tile GEMM over TileEmu (generic x86-64 code, no tile instructions): what the tests run on
// machines without AMX, the same template as qgemm_tiles_amx.cpp.
#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/qgemm_tiles_kernel.h"
#include "cpu/kernels/qgemm_tiles_scaled.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {

void gemm_q4_K_amxemu(const GemmArgs& a) {
  tiles_scaled::gemm<tiles::TileEmu, Q4KBlock>(a);
}
void gemm_q5_K_amxemu(const GemmArgs& a) {
  tiles_scaled::gemm<tiles::TileEmu, Q5KBlock>(a);
}
void gemm_q6_K8_amxemu(const GemmArgs& a) {
  tiles_kernel::gemm<tiles::TileEmu, tiles_kernel::Q6KFmt>(a);
}
void gemm_q8_0_amxemu(const GemmArgs& a) {
  tiles_kernel::gemm<tiles::TileEmu, tiles_kernel::Q80Fmt>(a);
}

void tile_dp_emu(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c) {
  tiles_kernel::single_dp<tiles::TileEmu>(op, m, k_bytes, a, lda, b, c);
}

}  // namespace dllm::cpu::qgemm
