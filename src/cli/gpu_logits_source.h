// Adapts the GPU forward pass (cuda::GpuForward) to the samplers' LogitsSource interface. Cached steps
// and CFG batches use LogitsSource's exact defaults (a full forward per canvas): GpuForward has no
// window or batch entry points yet.
#pragma once

#include <cstdint>
#include <span>

#include "cuda/device.h"
#include "diffusion/logits_source.h"

namespace dllm::cli {

class GpuLogitsSource : public diffusion::LogitsSource {
 public:
  /// `forward` must outlive this object.
  explicit GpuLogitsSource(cuda::GpuForward& forward) : forward_(forward) {}

  int64_t n_vocab() const override { return forward_.n_vocab(); }

  /// One GpuForward::forward over the canvas; rows.size() x n_vocab unshifted logits (host memory).
  void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) override {
    forward_.forward(canvas, rows, out);
  }

 private:
  cuda::GpuForward& forward_;
};

}  // namespace dllm::cli
