// --trace FILE: one JSON object per line per denoising step, for step-level comparison with the
// reference samplers. Written by hand (numbers and arrays only), no JSON library needed.
#pragma once

#include <string>

#include "base/atomic_file.h"
#include "diffusion/entropy_bound.h"
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
///
/// The file is an AtomicFile: each line is written to a temporary file beside `path` as its step
/// ends, and the whole appears at `path` with commit(); a run that fails or is interrupted leaves
/// `path` as it was. A pipe or a terminal (--trace /dev/stderr) gets each line as its step ends.
class TraceWriter {
 public:
  /// Opens the trace. Throws dllm::Error naming the path when it cannot be written (AtomicFile).
  explicit TraceWriter(const std::string& path) : file_(path, "trace file") {}

  /// Appends one line. Throws dllm::Error on a write error.
  void write(const StepInfo& info);
  /// Appends one DiffusionGemma line (format_eb). Throws dllm::Error on a write error.
  void write(const EbStepInfo& info, double forward_ms);

  /// Puts the finished trace at its path (AtomicFile::commit). Throws dllm::Error.
  void commit() { file_.commit(); }

  /// The line write() would append, without the newline.
  static std::string format(const StepInfo& info);

  /// A DiffusionGemma step (entropy-bound sampler), keys named as in the per-step log of llama.cpp
  /// PR #24423's sampler that tests/data/diffusion-gemma/README.md describes, so the two can be
  /// compared line by line:
  ///   {"block":B,"step":S,"cur_step":N,"t":T,"input_canvas":[...],"argmax":[...],"sampled":[...],
  ///    "accepted":[...],"entropy":[...],"u":[...],"renoise":[...],"mean_entropy":H,"stop":false,
  ///    "forward_ms":F}
  /// step counts from 0 within the block; input_canvas is the canvas the step's forward pass ran on;
  /// accepted lists the positions (0-based in the canvas) that keep their sample, the others take
  /// renoise; entropy is in nats of softmax(logits / t); floats with 9 significant digits.
  static std::string format_eb(const EbStepInfo& info, double forward_ms);

 private:
  AtomicFile file_;
};

}  // namespace dllm::diffusion
