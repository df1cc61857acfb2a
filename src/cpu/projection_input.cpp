// ProjectionInput (projection_input.h).
#include "cpu/projection_input.h"

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "quant/quant.h"

namespace dllm::cpu {

ProjectionInput::ProjectionInput(int64_t max_rows, int64_t n_in, const std::vector<const Matrix*>& consumers)
    : n_in_(n_in) {
  bool q8 = false, q80 = false;
  for (const Matrix* m : consumers) {
    q8 |= m->wants_q8k();
    u8_ |= m->wants_q8u();
    q80 |= m->wants_q8_0();
    u80_ |= m->wants_q8_0u();
  }
  const auto rows = static_cast<size_t>(max_rows);
  f32_.resize(rows * static_cast<size_t>(n_in));
  if (q8) {
    n_blocks_ = n_in / quant::kQK_K;
    q8_.resize(rows * static_cast<size_t>(n_blocks_));
    bs32_.resize(q8_.size() * 8);
    if (u8_) q8u_.resize(q8_.size() * quant::kQK_K);
  }
  if (q80) {
    n_blocks80_ = n_in / quant::kQK8_0;
    q80_.resize(rows * static_cast<size_t>(n_blocks80_));
    if (u80_) q80u_.resize(rows * static_cast<size_t>(n_in));
  }
}

void ProjectionInput::prepare_row(const RowKernels& rk, int64_t r) {
  if (n_blocks_ > 0) {
    quant::block_q8_K* blocks = q8_.data() + r * n_blocks_;
    rk.quantize_q8_K(row(r), blocks, n_in_);
    qgemm::make_bs32(blocks, 1, n_blocks_, bs32_.data() + r * n_blocks_ * 8);
    if (u8_) qgemm::make_u8(blocks, 1, n_blocks_, q8u_.data() + r * n_in_);
  }
  if (n_blocks80_ > 0) {
    quant::block_q8_0* blocks = q80_.data() + r * n_blocks80_;
    quant::quantize_row_q8_0(row(r), blocks, n_in_);
    if (u80_) qgemm::make_u8_q8_0(blocks, 1, n_blocks80_, q80u_.data() + r * n_in_);
  }
}

void ProjectionInput::prepare(const RowKernels& rk, int64_t n, int n_threads) {
  if (n_blocks_ == 0 && n_blocks80_ == 0) return;
#pragma omp parallel for schedule(static) num_threads(n_threads)
  for (int64_t r = 0; r < n; ++r) prepare_row(rk, r);
}

Activations ProjectionInput::view(int64_t n) const {
  return view(0, n);
}

Activations ProjectionInput::view(int64_t first, int64_t n) const {
  const auto f = static_cast<size_t>(first);
  Activations a;
  a.f32 = f32_.data() + f * n_in_;
  a.n_tokens = n;
  a.n_in = n_in_;
  if (n_blocks_ > 0) {
    a.q8k = q8_.data() + f * n_blocks_;
    a.bs32 = bs32_.data() + f * n_blocks_ * 8;
    a.q8u = u8_ ? q8u_.data() + f * n_in_ : nullptr;
  }
  if (n_blocks80_ > 0) {
    a.q8_0 = q80_.data() + f * n_blocks80_;
    a.q8_0u = u80_ ? q80u_.data() + f * n_in_ : nullptr;
  }
  return a;
}

}  // namespace dllm::cpu
