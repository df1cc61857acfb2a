// A GEMM whose B rows are decoded panel by panel: C += A[:, ids] . f16(B[ids, :]) over a chosen set of
// ids (A already binary16 values), B never held whole. DiffusionGemma's self-conditioning input is this
// product with A = the previous step's probabilities (canvas rows x n_vocab) and B = token_embd decoded row
// by row (llama.cpp PR #24423 diffusion-gemma.cpp multiplies them as an F16 matmul: ggml rounds both operands
// to f16 and accumulates in f32).
#pragma once

#include <cstdint>
#include <functional>

#include "base/isa.h"

namespace dllm::cpu {

/// Writes B[id][j] for j0 <= j < j1 (not yet rounded) to dst[j - j0]. j0 is a multiple of 16 and
/// j1 <= n. Called from several threads at once, each with its own dst.
using DecodeRow = std::function<void(int64_t id, int64_t j0, int64_t j1, float* dst)>;

/// The operands of panel_gemm.
struct PanelGemm {
  /// A: row i at a + i * lda, indexed by id; every entry a binary16 value already (softmax_f16 writes
  /// them so), which the product uses as it is.
  const float* a = nullptr;
  int64_t lda = 0;
  int64_t m = 0;                 ///< rows of A and C
  const int32_t* ids = nullptr;  ///< the k ids summed over, in the order they are summed
  int64_t k = 0;
  int64_t n = 0;       ///< columns of B and C
  DecodeRow b_row;     ///< B's rows
  float* c = nullptr;  ///< C: row i at c + i * ldc, n floats
  int64_t ldc = 0;
};

/// C[i][j] += sum over p < k, in increasing p, of A[i][ids[p]] * f16(B[ids[p]][j]), for i < m, j < n:
/// f16() rounds to the nearest binary16 value, ties to even (quant::fp32_to_fp16); the products are
/// accumulated in f32, one (on the SIMD paths fused) multiply-add per id into each element.
/// The threads split the columns into blocks of at most kBlockCols, never the ids, so C is the same
/// bit for bit for any n_threads (it differs between ISA paths by f32 rounding only). Each block runs
/// over all the ids with its C rows in the thread's L2, decoding its columns of B kPanelIds rows at a
/// time. Needs m, n, k >= 0; allocates per thread about kPanelIds x (kBlockCols + m) floats.
/// isa kAmx runs AMX-BF16 tiles (simd::panel_gemm_amx_bf16: the same sums within the bound of 4 k + 1
/// f32 terms) where amx_bf16_supported(), else the AVX-512 path.
void panel_gemm(Isa isa, const PanelGemm& g, int n_threads);

/// The path the forward pass runs this product on for the kernels' path `isa`: kAmx (AMX-BF16 tiles)
/// wherever amx_bf16_supported() and `isa` is kAvx512Vnni or kAmx, since the tiles are faster there
/// (docs/kernels.md, "the panel GEMM on AMX-BF16 tiles"); `isa` otherwise.
Isa panel_gemm_isa(Isa isa);

/// Ids per decoded panel of B: a strip of kPanelIds x nr floats (32 KB on the AVX-512 path) stays in
/// L1 while every row block of A passes over it.
constexpr int64_t kPanelIds = 256;

/// Widest column block: its m x kBlockCols C rows (768 KB at DiffusionGemma's 256 canvas rows), its
/// decoded B panel (kPanelIds x kBlockCols) and the A panel (m x kPanelIds) fit a 2 MB L2 together.
constexpr int64_t kBlockCols = 768;

}  // namespace dllm::cpu
