// --trace FILE: one JSON object per line per denoising step, for step-level comparison with the
// reference samplers. Written by hand (numbers and arrays only), no JSON library needed.
#pragma once

#include <cstdio>
#include <string>

#include "diffusion/sampler.h"

namespace dllm::diffusion {

/// Line format (keys in this order):
///   {"step":S,"block":B,"positions":[...],"tokens":[...],"confidences":[...],"masks_left":M,
///    "forward_ms":F,"sample_ms":T,"cache_refresh":C}
/// positions are canvas indices (prompt included); confidences are printed with 9 significant
/// digits (null when not finite). C says what the step's forward pass did with the Fast-dLLM cache
/// (StepInfo::cache, cache_refresh): "full" = a refresh, the full forward over the whole canvas that
/// rewrote every position's cached K/V (each block's first step); "window" = only the window's rows
/// were recomputed, against the K/V cached at the last refresh; "none" = no cache (every step is a
/// full forward and nothing is stored).
class TraceWriter {
 public:
  /// Opens (truncates) path. Throws dllm::Error naming the path when it cannot be written.
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  /// Appends one line and flushes it (a crashed run keeps its trace). Throws dllm::Error on a write error.
  void write(const StepInfo& info);

  /// The line write() would append, without the newline.
  static std::string format(const StepInfo& info);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace dllm::diffusion
