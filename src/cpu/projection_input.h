// The input of a projection (one or more weight matrices that read the same activations): the f32
// rows a pass writes, and the forms of them the consuming matrices' kernels read (cpu/matmul.h
// Activations): Q8_K blocks for Q4_K / Q5_K / Q6_K weights (ggml-cpu rounds every such input to
// Q8_K: ggml-cpu.c's vec_dot_type of those types), their sums of 32 for the K-quant min term,
// the values + 128 as bytes for the AVX-512 Q6_K kernel, and for Q8_0 weights the Q8_0 rounding
// (ggml's activation format for them) and its bytes + 128 for the VNNI Q8_0 kernels. It knows from
// its consumers which of those it must make, makes each once per activation row, and hands every
// consumer the same view, so Q/K/V and gate/up share one rounding.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "cpu/kernels/row_kernels.h"
#include "cpu/matmul.h"
#include "quant/blocks.h"

namespace dllm::cpu {

class ProjectionInput {
 public:
  ProjectionInput() = default;
  /// Room for max_rows rows of n_in floats (row-major, n_in contiguous) and the forms the matrices
  /// in `consumers` read: Q8_K blocks and their sums of 32 when one wants_q8k(), their +128 bytes
  /// when one wants_q8u(), Q8_0 blocks when one wants_q8_0() and their +128 bytes when one
  /// wants_q8_0u(). Every consumer must have n_in inputs (make_matrix checks the block multiples).
  ProjectionInput(int64_t max_rows, int64_t n_in, const std::vector<const Matrix*>& consumers);

  /// The f32 values of row r, for the pass that writes them.
  float* row(int64_t r) { return f32_.data() + r * n_in_; }
  const float* row(int64_t r) const { return f32_.data() + r * n_in_; }
  int64_t n_in() const { return n_in_; }
  /// Bytes held (every form, at max_rows).
  size_t bytes() const {
    return f32_.size() * sizeof(float) + q8_.size() * sizeof(quant::block_q8_K) +
           bs32_.size() * sizeof(int16_t) + q8u_.size() + q80_.size() * sizeof(quant::block_q8_0) +
           q80u_.size();
  }

  /// Makes the quantized forms of row r from its f32 values (after they are written), with the
  /// quantizer of `rk`. Rows are independent: threads may prepare different rows at once. A pass that
  /// writes a row calls this right after, while the row is still in cache (add+norm, SiLU * up).
  void prepare_row(const RowKernels& rk, int64_t r);
  /// prepare_row for rows [0, n) on n_threads OpenMP threads.
  void prepare(const RowKernels& rk, int64_t n, int n_threads);

  /// What the consumers' multiply() reads: rows [0, n), each form present only when a consumer
  /// needs it.
  Activations view(int64_t n) const;
  /// Rows [first, first + n) as a view of n rows (one sequence of a packed pass).
  Activations view(int64_t first, int64_t n) const;

 private:
  int64_t n_in_ = 0;
  int64_t n_blocks_ = 0;    ///< Q8_K blocks per row (n_in / 256) when a consumer reads them, else 0
  int64_t n_blocks80_ = 0;  ///< Q8_0 blocks per row (n_in / 32) when a consumer reads them, else 0
  bool u8_ = false, u80_ = false;
  std::vector<float> f32_;
  std::vector<quant::block_q8_K> q8_;   ///< max_rows x n_blocks
  std::vector<int16_t> bs32_;           ///< max_rows x n_blocks x 8 (qgemm::make_bs32)
  std::vector<uint8_t> q8u_;            ///< max_rows x n_in (qgemm::make_u8)
  std::vector<quant::block_q8_0> q80_;  ///< max_rows x n_blocks80 (quant::quantize_row_q8_0)
  std::vector<uint8_t> q80u_;           ///< max_rows x n_in (qgemm::make_u8_q8_0)
};

}  // namespace dllm::cpu
