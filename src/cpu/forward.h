// The bidirectional transformer forward pass on the CPU: prompt + canvas tokens in, logits for the
// requested rows out. No causal mask, no KV cache across calls. No allocation inside forward():
// every buffer is sized in the constructor for `max_tokens`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace dllm::model {
class Model;
}

namespace dllm::cpu {

struct ForwardOptions {
  int64_t max_tokens = 0;  ///< longest token sequence forward() will see (prompt + canvas)
  int n_threads = 0;       ///< 0: physical cores
};

class CpuForward {
 public:
  /// `model` must outlive this object. Throws dllm::Error when a weight type has no matrix kernel.
  CpuForward(const model::Model& model, const ForwardOptions& options);
  ~CpuForward();

  /// Runs the transformer over tokens[0..n) at positions 0..n-1 (n <= max_tokens) and writes the
  /// UNSHIFTED logits of positions rows[j] to logits[j * n_vocab .. (j+1) * n_vocab): a
  /// rows.size() x n_vocab row-major f32 matrix. Only those rows go through the LM head.
  /// Same inputs give bit-identical outputs whatever the thread count.
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* logits);

  int64_t n_vocab() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::cpu
