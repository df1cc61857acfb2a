// A GEMM whose B rows are decoded panel by panel: C += f16(A[:, ids]) . f16(B[ids, :]) over a chosen
// set of ids, B never held whole. DiffusionGemma's self-conditioning input is this product with A =
// the previous step's probabilities (canvas rows x n_vocab) and B = token_embd decoded row by row
// (llama.cpp PR #24423 diffusion-gemma.cpp multiplies them as an F16 matmul: ggml rounds both
// operands to f16 and accumulates in f32).
#pragma once

#include <cstdint>
#include <functional>

#include "base/isa.h"

namespace dllm::cpu {

/// Writes row `id` of B (n floats, not yet rounded) to dst. Called from several threads at once, each
/// with its own dst.
using DecodeRow = std::function<void(int64_t id, float* dst)>;

/// The operands of panel_gemm.
struct PanelGemm {
  const float* a = nullptr;  ///< A: row i at a + i * lda, indexed by id
  int64_t lda = 0;
  int64_t m = 0;                 ///< rows of A and C
  const int32_t* ids = nullptr;  ///< the k ids summed over, in the order they are summed
  int64_t k = 0;
  int64_t n = 0;       ///< columns of B and C
  DecodeRow b_row;     ///< B's rows
  float* c = nullptr;  ///< C: row i at c + i * ldc, n floats
  int64_t ldc = 0;
};

/// C[i][j] += sum over p < k, in increasing p, of f16(A[i][ids[p]]) * f16(B[ids[p]][j]), for i < m,
/// j < n: f16() rounds to the nearest binary16 value, ties to even (quant::fp32_to_fp16); the products
/// are accumulated in f32, one (on the SIMD paths fused) multiply-add per id into each element.
/// B's rows are decoded kPanelIds at a time, shared by the threads; the threads split the columns,
/// never the ids, so C is the same bit for bit for any n_threads (it differs between ISA paths by
/// f32 rounding only). Needs m, n, k >= 0; allocates about (kPanelIds + 1) x n + m x kPanelIds floats.
void panel_gemm(Isa isa, const PanelGemm& g, int n_threads);

/// Ids per decoded panel of B: a strip of kPanelIds x nr floats (32 KB on the AVX-512 path) stays in
/// L1 while every row block of A passes over it.
constexpr int64_t kPanelIds = 256;

}  // namespace dllm::cpu
