// Packed Q4_K / Q6_K weight layouts and the GEMM kernels over them (one set per ISA).
//
// Internal to src/cpu: the forward pass sees only cpu/matmul.h. The layouts are documented in
// docs/kernels.md; in short, a matrix of n_out rows x n_in columns is cut into groups of kRows = 16
// rows (the last group zero-padded), and each group's 256-weight super-blocks are stored one after the
// other, so the kernel streams one group's weights front to back. Inside a super-block the bytes are
// interleaved so that one 64-byte load holds 4 consecutive weights of each of the 16 rows: exactly the
// u8 operand of one zmm vpdpbusd (16 int32 lanes = 16 rows, each lane summing 4 products).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "quant/blocks.h"

namespace dllm::cpu::qgemm {

constexpr int kRows = 16;  ///< rows per group (one zmm of int32 / f32 lanes)

/// One super-block (256 weights) of a Q4_K group: 16 rows x 256 weights, 2368 bytes (4.625 bits per
/// weight; GGUF's block_q4_K is 4.5). Weight w = d * sc[j] * q - dmin * m[j] as in block_q4_K, with the
/// 6-bit sc/m already unpacked (they are read once per 32 weights, so unpacking them there would cost).
struct Q4KBlock {
  /// qs[j][p][r][b]: row r, sub-block j (values 32j..32j+31): low nibble = q[32j + 4p + b],
  /// high nibble = q[32j + 16 + 4p + b]. A 64-byte line qs[j][p] is two vpdpbusd operands (after
  /// masking / shifting), for the activation bytes 32j+4p.. and 32j+16+4p...
  alignas(64) uint8_t qs[8][4][kRows][4];
  uint8_t scales[8][kRows];   ///< sc[j] of row r (0..63)
  uint8_t mins[4][kRows][2];  ///< (m[2p], m[2p+1]) of row r: int16 pairs for vpdpwssd with the
                              ///< activation sums of 32 (bs32[2p], bs32[2p+1])
  uint16_t d[kRows];          ///< f16 super-block scale of row r
  uint16_t dmin[kRows];       ///< f16 super-block scale of the mins of row r
};
static_assert(sizeof(Q4KBlock) == 2368 && sizeof(Q4KBlock) % 64 == 0);

/// One super-block of a Q6_K group: 16 rows x 256 weights, 3392 bytes (6.625 bits per weight; GGUF's
/// block_q6_K is 6.5625). Weight w = d * sc[j] * (q - 32), q = 6 bits, j = sub-block of 16 values.
/// The 6-bit q stays 6 bits: a low-nibble plane laid out like Q4KBlock::qs and a 2-bit plane.
struct Q6KBlock {
  /// ql[s][p][r][b]: row r, span s (values 32s..32s+31, sub-blocks 2s and 2s+1): low nibble =
  /// q[32s + 4p + b] & 15, high nibble = q[32s + 16 + 4p + b] & 15.
  alignas(64) uint8_t ql[8][4][kRows][4];
  /// qh[s][h][r][b]: the top 2 bits (q >> 4) of four values: bits 0-1 of q[32s + 8h + b],
  /// bits 2-3 of q[32s + 16 + 8h + b], bits 4-5 of q[32s + 8h + 4 + b], bits 6-7 of q[32s + 16 + 8h + 4 + b]
  /// (that is ql lines p = 2h and p = 2h + 1).
  uint8_t qh[8][2][kRows][4];
  int8_t scales[8][kRows][2];  ///< (sc[2s], sc[2s+1]) of row r: int16 pairs for vpdpwssd with bsums
  float d[kRows];              ///< super-block scale of row r (f32: fills the line the layout pads anyway)
};
static_assert(sizeof(Q6KBlock) == 3392 && sizeof(Q6KBlock) % 64 == 0);

/// One super-block of a Q6_K group for the AVX-512 path: the 6-bit q in a byte each, so a 64-byte line
/// is a vpdpbusd operand as loaded (the nibble + 2-bit planes of Q6KBlock cost ~8 unpacking
/// instructions per line, which left that kernel bound by instruction issue). 4480 bytes (8.75 bits
/// per weight); weight w = d * sc[j] * (q - 32) as in Q6KBlock.
struct Q6K8Block {
  /// q[s][p][h][r][b]: row r, value 32s + 16h + 4p + b (h = 0: sub-block 2s, h = 1: sub-block 2s + 1),
  /// stored as q - 32 (signed): the kernel multiplies it by the activations + 128 (unsigned).
  alignas(64) int8_t q[8][4][2][kRows][4];
  int8_t scales[8][kRows][2];  ///< (sc[2s], sc[2s+1]) of row r, as in Q6KBlock
  float d[kRows];              ///< super-block scale of row r
  /// 128 * sum_j sc[j] * sum_{i in j} (q_i - 32) of row r: what the +128 of the activations adds to
  /// the integer sum, subtracted once per super-block.
  int32_t corr[kRows];
};
static_assert(sizeof(Q6K8Block) == 4480 && sizeof(Q6K8Block) % 64 == 0);

/// 64-byte aligned owning buffer.
struct AlignedFree {
  void operator()(void* p) const;
};
template <typename T>
using AlignedArray = std::unique_ptr<T[], AlignedFree>;
/// n zero-initialised objects, 64-byte aligned.
template <typename T>
AlignedArray<T> aligned_zeros(size_t n);
extern template AlignedArray<Q4KBlock> aligned_zeros<Q4KBlock>(size_t);
extern template AlignedArray<Q6KBlock> aligned_zeros<Q6KBlock>(size_t);
extern template AlignedArray<Q6K8Block> aligned_zeros<Q6K8Block>(size_t);

/// Repacks n_out rows of GGUF Q4_K blocks (row-major, n_in / 256 blocks per row) into
/// ceil(n_out / 16) x (n_in / 256) Q4KBlocks, group-major. Rows past n_out are zero. n_in % 256 == 0.
AlignedArray<Q4KBlock> pack_q4_K(const quant::block_q4_K* src, int64_t n_out, int64_t n_in);
/// Same for Q6_K.
AlignedArray<Q6KBlock> pack_q6_K(const quant::block_q6_K* src, int64_t n_out, int64_t n_in);

/// The arguments of one kernel call: row groups [g_begin, g_end) of a packed matrix times all tokens.
/// Output row o = 16 g + r goes to y[t * ldy + o] only when o_begin <= o < o_end (the caller's range,
/// already clipped to n_out), so the zero-padded rows of the last group are never written.
struct GemmArgs {
  /// Q4KBlock*, Q6KBlock*, Q6K8Block*, or Q80Block* / Q50Block* / Q5KBlock* (cpu/kernels/qgemm_bytes.h),
  /// [group][super-block]
  const void* w = nullptr;
  int64_t n_sb = 0;                ///< super-blocks per row (n_in / 256; Q80Block, Q50Block: blocks of 32)
  int64_t g_begin = 0, g_end = 0;  ///< row groups to compute
  /// Groups in the whole matrix (0: unknown). A kernel may prefetch the groups after g_end: the
  /// thread's next work item usually starts there.
  int64_t n_groups = 0;
  const quant::block_q8_K* x = nullptr;  ///< n_tokens x n_sb activation blocks, row-major
  int64_t n_tokens = 0;
  /// Q4_K only: n_tokens x n_sb x 8 sums of 32 activation values (bsums[2j] + bsums[2j + 1]),
  /// built by make_bs32 so each kernel reads the pair (bs32[2p], bs32[2p+1]) as one int32.
  const int16_t* bs32 = nullptr;
  /// Q6K8Block: the activation values + 128 as unsigned bytes, n_tokens x n_sb x 256 (make_u8).
  /// Q80Block, Q50Block on the VNNI paths: the Q8_0 activation values + 128, n_tokens x n_sb x 32
  /// (make_u8_q8_0).
  const uint8_t* xu8 = nullptr;
  /// Q80Block, Q50Block only: the activations as Q8_0 blocks, n_tokens x n_sb, row-major (x is unused).
  const quant::block_q8_0* x80 = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
  int64_t o_begin = 0, o_end = 0;
};

/// Same as pack_q6_K into the byte layout of Q6K8Block (src/cpu/qgemm_q6k8_pack.cpp).
AlignedArray<Q6K8Block> pack_q6_K8(const quant::block_q6_K* src, int64_t n_out, int64_t n_in);

/// bs32[(t * n_sb + b) * 8 + j] = x[t][b].bsums[2j] + x[t][b].bsums[2j + 1] (|value| <= 32 * 128).
void make_bs32(const quant::block_q8_K* x, int64_t n_tokens, int64_t n_sb, int16_t* bs32);

/// xu8[(t * n_sb + b) * 256 + i] = x[t][b].qs[i] + 128 (as unsigned: the sign bit flipped).
void make_u8(const quant::block_q8_K* x, int64_t n_tokens, int64_t n_sb, uint8_t* xu8);

// The kernels: y = W x for the rows and tokens in `a`. Each computes, per row, token and super-block,
// the exact int32 sums sum_j sc[j] * sum(q * x) and the zero-point sum (Q4_K: sum_j m[j] * bs32[j];
// Q6_K: sum_j sc[j] * bsums[j], times 32), then accumulates d_x * (d * S - dmin * M) in f32.
void gemm_q4_K_scalar(const GemmArgs& a);
void gemm_q6_K_scalar(const GemmArgs& a);
void gemm_q4_K_avx2(const GemmArgs& a);
/// Q6_K over Q6K8Block groups (a.w) and the activation bytes + 128 (a.xu8): the AVX2 path's Q6_K kernel.
void gemm_q6_K8_avx2(const GemmArgs& a);
void gemm_q4_K_avxvnni(const GemmArgs& a);
void gemm_q6_K_avxvnni(const GemmArgs& a);
void gemm_q4_K_avx512(const GemmArgs& a);
/// Q6_K over Q6K8Block groups (a.w), the AVX-512 path's Q6_K kernel.
void gemm_q6_K8_avx512(const GemmArgs& a);
/// Q6_K over Q6KBlock groups (a.w), zmm: the AVX-512 path's kernel for compact expert matrices
/// (qgemm_avx512.cpp); the same bits as the ymm kernel of the AVX-VNNI path.
void gemm_q6_K_avx512(const GemmArgs& a);
/// Q6_K over Q6KBlock groups, ymm vpdpbusd under the AVX-512 flags (qgemm_ymm_avx512.cpp): the
/// reference gemm_q6_K_avx512 is tested against; no path runs it.
void gemm_q6_K_avx512ymm(const GemmArgs& a);

}  // namespace dllm::cpu::qgemm
