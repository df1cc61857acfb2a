// Packed Q8_0 and Q5_K weight layouts, one byte per weight, and Q5_0's, 6 bits per weight, and the
// GEMM kernels over them (one per ISA path); also the emulated-VNNI kernels of every layout, which the
// tests run on CPUs without VNNI.
//
// Internal to src/cpu, like cpu/kernels/qgemm.h, whose group structure they share: a matrix of n_out rows x
// n_in columns is cut into groups of kRows = 16 rows (the last zero-padded), a group's blocks are
// stored one after the other, and one 64-byte line holds 4 consecutive weights of each of the 16 rows
// (a zmm vpdpbusd operand, or two ymm ones). docs/kernels.md describes the layouts and the arithmetic.
// Q8_0 and Q5_K appear in Q4_K_M files of mixture-of-experts models (llama-quantize gives attn_k /
// attn_v Q8_0 and attn_output Q5_K once a model has 8 or more experts), so there these kernels run only
// the attention projections, and Q5_K's ymm code serves the AVX-512 path too; Q8_0 and Q5_0 also carry
// DiffusionGemma's expert down projections and have zmm kernels there (docs/kernels.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/qgemm.h"
#include "quant/blocks.h"

namespace dllm::cpu::qgemm {

/// One block (32 weights) of a Q8_0 group: 16 rows x 32 weights, 576 bytes (9 bits per weight; GGUF's
/// block_q8_0 is 8.5). Weight w = d * q, q int8, as in block_q8_0.
struct Q80Block {
  /// qs[p][r][b]: row r, value 4p + b.
  alignas(64) int8_t qs[8][kRows][4];
  uint16_t d[kRows];  ///< f16 scale of row r
  /// Sum of row r's 32 quants (|sum| <= 4096). The VNNI kernels multiply the weights by the
  /// activations + 128 as unsigned bytes and subtract 128 * sum: sum (x + 128) q = sum x q + 128 sum q.
  int16_t sum[kRows];
};
static_assert(sizeof(Q80Block) == 576 && sizeof(Q80Block) % 64 == 0);

/// One block (32 weights) of a Q5_0 group: 16 rows x 32 weights, 384 bytes (6 bits per weight; GGUF's
/// block_q5_0 is 5.5, Q80Block 9). Weight w = d * (q - 16), q = 0..31 as in block_q5_0. The kernels
/// decode line p of Q80Block::qs from it in registers (ql nibbles, nh bit p moved to bit 4: q - 16 =
/// lo - 16 nh) and from there run the Q8_0 arithmetic on the same int8 values, d and sum.
struct Q50Block {
  /// ql[p][r][b]: row r, the 4 low bits of value 4p + b (low nibble) and of value 16 + 4p + b (high
  /// nibble), p = 0..3: one line gives Q80Block lines p and p + 4.
  alignas(64) uint8_t ql[4][kRows][4];
  /// nh[r][b]: bit p (0..7) is 1 - bit 4 of row r's q at value 4p + b (inverted, so that the decode
  /// subtracts it: q - 16 = lo - 16 (1 - bit 4)).
  uint8_t nh[kRows][4];
  uint16_t d[kRows];   ///< f16 scale of row r
  int16_t sum[kRows];  ///< sum of row r's 32 values q - 16, as Q80Block::sum (|sum| <= 512)
};
static_assert(sizeof(Q50Block) == 384 && sizeof(Q50Block) % 64 == 0);

/// One super-block (256 weights) of a Q5_K group: 16 rows x 256 weights, 4416 bytes (8.625 bits per
/// weight; GGUF's block_q5_K is 5.5). Weight w = d * sc[j] * q - dmin * m[j], q = 0..31, as in
/// block_q5_K; scales, mins and d / dmin as in Q4KBlock. The 5-bit q gets a byte of its own, so a
/// line is a vpdpbusd / vpmaddubsw operand as loaded (no unpacking of a nibble and a bit plane).
struct Q5KBlock {
  /// q[j][p][r][b]: row r, value 32j + 4p + b of sub-block j.
  alignas(64) uint8_t q[8][8][kRows][4];
  uint8_t scales[8][kRows];   ///< sc[j] of row r (0..63)
  uint8_t mins[4][kRows][2];  ///< (m[2p], m[2p+1]) of row r, int16 pairs with (bs32[2p], bs32[2p+1])
  uint16_t d[kRows];          ///< f16 super-block scale of row r
  uint16_t dmin[kRows];       ///< f16 super-block scale of the mins of row r
};
static_assert(sizeof(Q5KBlock) == 4416 && sizeof(Q5KBlock) % 64 == 0);

extern template AlignedArray<Q80Block> aligned_zeros<Q80Block>(size_t);
extern template AlignedArray<Q5KBlock> aligned_zeros<Q5KBlock>(size_t);
extern template AlignedArray<Q50Block> aligned_zeros<Q50Block>(size_t);

/// Repacks n_out rows of GGUF Q8_0 blocks (row-major, n_in / 32 per row) into ceil(n_out / 16) x
/// (n_in / 32) Q80Blocks, group-major. Rows past n_out are zero. n_in % 32 == 0.
AlignedArray<Q80Block> pack_q8_0(const quant::block_q8_0* src, int64_t n_out, int64_t n_in);
/// Same for Q5_K into Q5KBlocks (n_in / 256 per row). n_in % 256 == 0.
AlignedArray<Q5KBlock> pack_q5_K(const quant::block_q5_K* src, int64_t n_out, int64_t n_in);
/// Same for Q5_0 into Q50Blocks (n_in / 32 per row). n_in % 32 == 0.
AlignedArray<Q50Block> pack_q5_0(const quant::block_q5_0* src, int64_t n_out, int64_t n_in);

/// xu8[(t * n_b + b) * 32 + i] = x[t][b].qs[i] + 128 (as unsigned: the sign bit flipped), for
/// n_tokens rows of n_b Q8_0 blocks.
void make_u8_q8_0(const quant::block_q8_0* x, int64_t n_tokens, int64_t n_b, uint8_t* xu8);

// Q8_0 kernels: GemmArgs::w = Q80Block groups, n_sb = blocks of 32 per row, x80 = the Q8_0
// activations, and on the VNNI paths xu8 = their bytes + 128. Per row, token and block the exact int32
// sum of 32 products (|sum| <= 32 * 128 * 127 < 2^19), then y += (d_w * d_x) * sum in f32.
// Q5_K kernels: GemmArgs as for Q4_K (x = Q8_K activations, bs32 = their sums of 32); per row, token
// and super-block S = sum_j sc[j] * sum(q * x) (|S| <= 8 * 63 * 32 * 31 * 127 < 2^27) and
// M = sum_j m[j] * bs32[j], then y += d_x * (d * S - dmin * M).
// Q5_0 kernels: GemmArgs as for Q8_0 with w = Q50Block groups; the Q8_0 kernel of the same path on
// the values q - 16, so the same int32 sums and f32 steps: bit-identical to packing the
// q5_0_to_q8_0 conversion as Q80Block (tested).
void gemm_q8_0_scalar(const GemmArgs& a);
void gemm_q5_0_scalar(const GemmArgs& a);
void gemm_q5_K_scalar(const GemmArgs& a);
void gemm_q8_0_avx2(const GemmArgs& a);
void gemm_q5_K_avx2(const GemmArgs& a);
void gemm_q5_0_avx2(const GemmArgs& a);
void gemm_q8_0_avxvnni(const GemmArgs& a);
void gemm_q5_K_avxvnni(const GemmArgs& a);
void gemm_q5_0_avxvnni(const GemmArgs& a);
/// The AVX-512 VNNI path's kernels: Q8_0 / Q5_0 on zmm (32-row x 4-token tiles, the same integer sums
/// and f32 steps as the ymm kernels, so the same bits); Q5_K the ymm VNNI code of the avxvnni one
/// compiled with -mavx512vl -mavx512vnni (EVEX vpdpbusd on ymm), so what runs there is what the
/// emulated kernels test.
void gemm_q8_0_avx512(const GemmArgs& a);
void gemm_q5_K_avx512(const GemmArgs& a);
void gemm_q5_0_avx512(const GemmArgs& a);

/// Tests only: the avxvnni kernels of each layout (Q4KBlock, Q6KBlock, Q80Block, Q5KBlock, Q50Block) with
/// vpdpbusd / vpdpwssd replaced by exact AVX2 sequences (kernels/ymm_dot.h YmmVnniEmu), so the VNNI
/// code paths run on a CPU with AVX2 only. Not for production: slower than the AVX2 kernels.
void gemm_q4_K_vnniemu(const GemmArgs& a);
void gemm_q6_K_vnniemu(const GemmArgs& a);
void gemm_q8_0_vnniemu(const GemmArgs& a);
void gemm_q5_K_vnniemu(const GemmArgs& a);
void gemm_q5_0_vnniemu(const GemmArgs& a);

}  // namespace dllm::cpu::qgemm
