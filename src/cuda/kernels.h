// Host-callable launchers of the CUDA kernels (src/cuda/*.cu). Plain C++ types only (f16 buffers as
// uint16_t), so host code and the tests include this without nvcc. Every pointer is device memory
// unless it says host; every launcher enqueues on `stream`, checks the launch and returns at once.
//
// Legend: n_tok = tokens (rows of an activation matrix), n_in = a matrix's input width (contiguous),
// n_out = its output rows, hd = head_dim. Activation matrices are row-major n_tok x width.
//
// Int8 activations (the Q8_1 shape, ggml-common.h block_q8_1, stored as two arrays for aligned
// loads): q is n_tok x n_in int8, ds is n_tok x (n_in / 32) pairs {d, d * sum(q)} of f32, one pair
// per 32 consecutive values, x ~= d * q. The values are rounded exactly as ggml-cpu rounds a matrix
// input to Q8_K (quantize_row_q8_K_ref: per 256 values d = max / -127 with max the signed value of
// largest magnitude, q = round-half-even(x / d) clamped to 127), so each 256-block's d is repeated in
// its 8 pairs: the GPU sees the same int8 activations as the CPU path and llama.cpp's reference
// logits. The per-32 sum lets the GEMM apply a weight zero point (the Q4_K min) once per 32 values.
// f16 copies (for the cuBLAS path) are either the value itself or, with f16_q8, the rounded d * q
// (the input a Q4_K / Q6_K matrix sees on the CPU).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/row_stats.h"

namespace dllm::cuda::kern {

/// Weight layouts on the device. kQ4_K: ggml block_q4_K as stored (144 bytes, 16-byte aligned).
/// kQ6_K: ggml block_q6_K padded from 210 to kQ6KPaddedBytes (ql, qh, scales, d at their ggml offsets,
/// then 14 zero bytes) so every block starts 16-byte aligned and 4-byte loads of ql/qh are aligned.
/// kF16 / kF32 / kBF16: plain rows.
enum class WType : int { kQ4_K = 0, kQ6_K = 1, kF16 = 2, kF32 = 3, kBF16 = 4 };

constexpr int kQ4KBytes = 144;
constexpr int kQ6KPaddedBytes = 224;

/// out[j][e] = W[row(j)][e] for j < n_rows, e < n_in, row(j) = row_ids[j] (device int32) when
/// row_ids != nullptr, else row0 + j. Writes f32 to out32 and/or f16 to out16 (either may be null),
/// row stride ld elements. `w` has rows of row_bytes bytes. Same values as quant::dequantize_row
/// (the token-embedding lookup and the cuBLAS path's f16 scratch).
void dequant_rows(WType type, const void* w, int64_t row_bytes, int64_t n_in, const int32_t* row_ids,
                  int64_t row0, int64_t n_rows, float* out32, uint16_t* out16, int64_t ld,
                  cudaStream_t stream);

/// Fused residual add + RMSNorm + quantize, one token row at a time (n multiple of 32):
///   v = x[src] (+ add[src] when add != null), written back to x[src] when write_back;
///   y[j] = v * (1 / sqrt(mean(v^2) + eps)) * w          (cpu::rmsnorm)
/// src = gather[j] (device int32) when gather != null, else j, for j < n_rows. y goes to y16 (f16,
/// may be null; see f16_q8 in the legend) and to q / ds (int8 activations); row j of the outputs.
void add_rmsnorm_quant(float* x, const float* add, bool write_back, const float* w, float eps, int64_t n_rows,
                       int64_t n, const int32_t* gather, uint16_t* y16, bool f16_q8, int8_t* q, float* ds,
                       cudaStream_t stream);

/// Quantizes n_rows x n f32 rows (n multiple of 32) to f16 (y16, may be null) and int8 (q / ds).
void quantize_rows(const float* x, int64_t n_rows, int64_t n, uint16_t* y16, bool f16_q8, int8_t* q,
                   float* ds, cudaStream_t stream);

/// SwiGLU + quantize: y = silu(gate) * up (cpu::silu_mul), n_rows x n (n multiple of 32), to f16 and int8.
void silu_mul_quant(const float* gate, const float* up, int64_t n_rows, int64_t n, uint16_t* y16, bool f16_q8,
                    int8_t* q, float* ds, cudaStream_t stream);

/// Per token t < n_tok: q, k, v += their biases (Dream; all three null for LLaDA), then RoPE on every
/// head of q (n_head) and k (n_head_kv) with cos/sin row t (hd/2 values per row, as model::RopeTable).
/// neox = false: pairs (2i, 2i+1) (LLaDA); true: pairs (i, i + hd/2) (Dream). cpu::rope's arithmetic.
void bias_rope(float* q, float* k, float* v, const float* bq, const float* bk, const float* bv,
               const float* cos, const float* sin, int64_t n_tok, int64_t n_head, int64_t n_head_kv,
               int64_t hd, bool neox, cudaStream_t stream);

/// Attention, GQA (query head h reads kv head h / (n_head / n_head_kv)): out = softmax(scale * q k^T) v
/// per head over the keys of each query's range, q / out n_tok x (n_head * hd), k / v n_tok x
/// (n_head_kv * hd). ranges: 2 x n_tok int32 (device), query t sees keys [ranges[2t], ranges[2t+1])
/// (forward/mask.h), not empty; nullptr: every query sees all n_tok keys (no mask). One warp per
/// (head, query) with an f32 online softmax (running max and sum, no score matrix stored: any
/// n_tok). hd: a multiple of 32, at most 256.
void attention(const float* q, const float* k, const float* v, const int32_t* ranges, float* out,
               int64_t n_tok, int64_t n_head, int64_t n_head_kv, int64_t hd, float scale,
               cudaStream_t stream);

/// y[t * ldy + o] = sum_e W[o][e] * x[t][e] for t < n_tok, o < n_out, from Q4_K or Q6_K (padded)
/// weights and int8 activations q / ds (q must hold round_up(n_tok, 32) rows: the tail rows are read
/// but their results never stored). Int8 tensor cores: mma.sync m16n8k32 s8 per Q4_K sub-block of 32
/// (the min term folded through the activation sums), m16n8k16 s8 per Q6_K sub-block of 16 (q - 32
/// formed in the fragment). n_in multiple of 256.
void gemm_int8(WType type, const void* w, int64_t row_bytes, int64_t n_out, int64_t n_in, const int8_t* q,
               const float* ds, int64_t n_tok, float* y, int64_t ldy, cudaStream_t stream);

/// RowStats (row_stats.h) of n_rows logits rows (n_vocab values each, row stride ld) into out[j]
/// (device memory). allowed: n_vocab bytes, nonzero = the id takes part; nullptr: every id. One block
/// per row; the softmax sums in f64 as src/diffusion/row_ops.cpp does.
void row_stats(const float* logits, int64_t n_rows, int64_t n_vocab, int64_t ld, const uint8_t* allowed,
               RowStats* out, cudaStream_t stream);

/// Rows of the int8 activation buffer gemm_int8 reads per tile of tokens.
constexpr int64_t kTokenTile = 32;

/// Test hooks for the fragment layouts: one mma.sync on one warp. a: 16 x 32 int8 row-major (k
/// contiguous), b: 8 x 32 int8 (one row of 32 per output column, k contiguous), c: 16 x 8 int32
/// row-major, c = a b^T. mma_s8_k16 likewise with 16 x 16 and 8 x 16.
void mma_s8_k32(const int8_t* a, const int8_t* b, int32_t* c, cudaStream_t stream);
void mma_s8_k16(const int8_t* a, const int8_t* b, int32_t* c, cudaStream_t stream);

}  // namespace dllm::cuda::kern
