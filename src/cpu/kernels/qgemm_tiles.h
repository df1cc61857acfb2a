// The AMX tile GEMM kernels for the packed layouts of cpu/kernels/qgemm.h and qgemm_bytes.h, with the
// GemmArgs of the other kernels of each layout (Q4_K / Q5_K: x and bs32; Q6_K: x, not xu8; Q8_0: x80,
// not xu8). On the hardware Q4_K and Q5_K (qgemm_tiles_scaled.h, with the sub-block scales in B); the
// per-scale-block kernel of Q6K8Block and Q80Block (qgemm_tiles_kernel.h) measured slower than AVX-512
// and runs only on the emulation (docs/kernels.md, "Intel AMX tiles").
#pragma once

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {

/// gemm_q4_K_amx and gemm_q5_K_amx run calls of fewer tokens than this on the AVX-512 kernel
/// (gemm_q4_K_avx512, gemm_q5_K_avx512), which gives the same bits.
constexpr int64_t kTileMinTokens = 7;
/// Q4_K and Q5_K on the Intel AMX instructions (qgemm_tiles_amx.cpp, compiled with -mamx-tile
/// -mamx-int8). Only where isa_supported(Isa::kAmx): the CPU has AMX-TILE and AMX-INT8, the OS saves
/// the tile state and granted this process XTILEDATA (base/isa.cpp); elsewhere the first tile
/// instruction faults.
void gemm_q4_K_amx(const GemmArgs& a);
void gemm_q5_K_amx(const GemmArgs& a);

/// Tests only: the tile kernels over TileEmu (cpu/kernels/tile_unit.h), the instructions' scalar
/// emulation, on any x86-64 CPU. Far slower than every other path.
void gemm_q4_K_amxemu(const GemmArgs& a);
void gemm_q5_K_amxemu(const GemmArgs& a);
void gemm_q6_K8_amxemu(const GemmArgs& a);
void gemm_q8_0_amxemu(const GemmArgs& a);

/// Tests only: one tile product, c (m x 16 int32) = a (m x k_bytes bytes, row stride lda) times b
/// (k_bytes / 4 rows x 64 bytes, the VNNI layout), with `op` saying how a's and b's bytes extend:
/// on the hardware (tile_dp_amx, only where isa_supported(Isa::kAmx)) and on TileEmu.
void tile_dp_amx(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c);
void tile_dp_emu(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c);

}  // namespace dllm::cpu::qgemm
