// Adapts the CPU forward pass (cpu::CpuForward) to the samplers' LogitsSource interface, so the
// denoising loops in src/diffusion never see the backend. Later backends (CUDA) get their own adapter.
#pragma once

#include <cstdint>
#include <span>

#include "cpu/forward.h"
#include "diffusion/logits_source.h"

namespace dllm::cli {

class CpuLogitsSource : public diffusion::LogitsSource {
 public:
  /// `forward` must outlive this object.
  explicit CpuLogitsSource(cpu::CpuForward& forward) : forward_(forward) {}

  int64_t n_vocab() const override { return forward_.n_vocab(); }

  /// One CpuForward::forward over the canvas; rows.size() x n_vocab unshifted logits into `out`.
  /// Throws what CpuForward throws (dllm::Error for a canvas longer than the buffers were sized for).
  void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) override {
    forward_.forward(canvas, rows, out);
  }

 private:
  cpu::CpuForward& forward_;
};

}  // namespace dllm::cli
