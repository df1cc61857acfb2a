// How the diffusion samplers see the model: a function from a canvas to logits for chosen rows.
// The samplers depend only on this interface (and src/base), so tests drive them with scripted logits
// and the CLI adapts the CPU (later CUDA) forward pass to it. Not a model: no shift, no masking here.
#pragma once

#include <cstdint>
#include <span>

namespace dllm::diffusion {

class LogitsSource {
 public:
  virtual ~LogitsSource() = default;

  /// Logit rows per position (the LM head's output size; may exceed the tokenizer's vocabulary,
  /// e.g. Dream: 152064 rows for 151667 tokens).
  virtual int64_t n_vocab() const = 0;

  /// Runs the model over the whole canvas (positions 0..canvas.size()-1, bidirectional) and writes
  /// the UNSHIFTED logits of positions rows[j] to out[j * n_vocab .. (j+1) * n_vocab): a
  /// rows.size() x n_vocab row-major f32 matrix (vocab contiguous). rows are distinct, in [0,
  /// canvas.size()), in increasing order. The sampler applies the Dream logit shift itself by asking
  /// for row i-1. May throw dllm::Error; the sampler lets it propagate.
  virtual void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) = 0;
};

}  // namespace dllm::diffusion
