// The bidirectional transformer forward pass on the CPU: prompt + canvas tokens in, logits for the
// requested rows out. No causal mask, no KV cache across calls. No allocation inside forward():
// every buffer is sized in the constructor for `max_tokens`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "cpu/matmul.h"
#include "model/config.h"

namespace dllm::model {
class Model;
}  // namespace dllm::model

namespace dllm::cpu {

struct ForwardOptions {
  int64_t max_tokens = 0;  ///< longest token sequence forward() will see (prompt + canvas)
  int n_threads = 0;       ///< 0: physical cores (physical_core_count())
  /// Kernel path for the Q4_K / Q6_K weight matrices; nullopt: choose_isa("") (cpu/dispatch.h: the
  /// $DLLM_CPU_ISA override, else the fastest path this CPU supports).
  std::optional<Isa> isa;
  /// Diagnostics only: forces a RoPE pairing instead of the architecture's (tests use it to show
  /// that a convention error is caught by the reference-logits comparison). nullopt: the model's.
  std::optional<model::RopeMode> rope_mode;
};

/// Physical cores this process may run on: distinct (package, core) pairs among the CPUs of its
/// affinity mask, read from /sys/devices/system/cpu/cpuN/topology; falls back to
/// std::thread::hardware_concurrency() (logical CPUs) when that is unreadable. At least 1.
int physical_core_count();

class CpuForward {
 public:
  /// `model` must outlive this object. Throws dllm::Error when a weight type has no matrix kernel.
  CpuForward(const model::Model& model, const ForwardOptions& options);
  ~CpuForward();

  /// Runs the transformer over tokens[0..n) at positions 0..n-1 (n <= max_tokens) and writes the
  /// UNSHIFTED logits of positions rows[j] to logits[j * n_vocab .. (j+1) * n_vocab): a
  /// rows.size() x n_vocab row-major f32 matrix. Only those rows go through the LM head.
  /// Same inputs give bit-identical outputs whatever the thread count. Throws dllm::Error (before
  /// any compute) when n is 0 or above max_tokens, a token id is outside token_embd's rows, a row is
  /// outside [0, n), or rows.size() > max_tokens. Not reentrant: one forward() at a time per object.
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* logits);

  int64_t n_vocab() const;
  /// Threads forward() runs on (ForwardOptions::n_threads resolved).
  int n_threads() const;
  /// The kernel path in use (ForwardOptions::isa resolved).
  Isa isa() const;
  /// ForwardOptions::max_tokens.
  int64_t max_tokens() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::cpu
