// Adapts the CPU forward pass (cpu::CpuForward) to the samplers' LogitsSource interface, so the
// denoising loops in src/diffusion never see the backend. Later backends (CUDA) get their own adapter.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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

  /// Fast-dLLM's cached step on CpuForward::forward_window, with this source's KvCache (one canvas
  /// per source).
  void logits_cached(std::span<const int32_t> canvas, std::span<const int32_t> rows, int64_t window_begin,
                     int64_t window_end, bool refresh, float* out) override {
    forward_.forward_window(canvas, window_begin, window_end, rows, out, cache_, refresh);
  }

  /// The canvases through CpuForward::forward_batch in one pass (needs ForwardOptions::max_batch >=
  /// their count; CFG sets 2), else one forward() each.
  void logits_batch(std::span<const std::span<const int32_t>> canvases, std::span<const int32_t> rows,
                    float* out) override {
    if (canvases.size() < 2 || static_cast<int64_t>(canvases.size()) > forward_.max_batch()) {
      LogitsSource::logits_batch(canvases, rows, out);
      return;
    }
    batch_.clear();
    for (const auto& c : canvases) batch_.insert(batch_.end(), c.begin(), c.end());
    forward_.forward_batch(batch_, static_cast<int64_t>(canvases.size()), rows, out);
  }

  /// Bytes held by the KV cache (0 until the first refresh).
  size_t cache_bytes() const { return cache_.bytes(); }

 private:
  cpu::CpuForward& forward_;
  cpu::KvCache cache_;
  std::vector<int32_t> batch_;
};

}  // namespace dllm::cli
