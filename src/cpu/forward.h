// The transformer forward pass on the CPU: forward::Forward (one call, forward(segments)) as
// model::ForwardDriver over the CPU's operations (forward.cpp). Bidirectional or masked attention,
// K/V kept in each sequence's forward::KvState, several segments per pass (the batching engine's
// packed steps, classifier-free guidance's pair). Buffers grow with the largest pass run, up to
// max_batch x max_tokens rows; a pass allocates only when it is larger than every pass before it,
// and a K/V state grows with the rows it holds.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/isa.h"
#include "cpu/threads.h"
#include "forward/pass.h"
#include "model/config.h"

namespace dllm::model {
class Model;
}  // namespace dllm::model

namespace dllm::cpu {

struct ForwardOptions {
  int64_t max_tokens = 0;  ///< positions a sequence may have (prompt + canvas): the RoPE table's rows
  int n_threads = 0;       ///< 0: physical cores (physical_core_count())
  /// Kernel path for the Q4_K / Q6_K weight matrices; nullopt: choose_isa("") (base/isa.h: the
  /// $DLLM_CPU_ISA override, else the fastest path this CPU supports).
  std::optional<Isa> isa;
  /// Diagnostics only: forces a RoPE pairing instead of the architecture's (tests use it to show
  /// that a convention error is caught by the reference-logits comparison). nullopt: the model's.
  std::optional<model::RopeMode> rope_mode;
  /// Sequences of max_tokens one pass may hold (classifier-free guidance needs 2): at most
  /// max_batch x max_tokens activation rows per pass.
  int max_batch = 1;
};

/// A sequence's K/V on the CPU (the forward::KvState::Storage CpuForward makes): per layer, K and V of
/// positions 0 .. capacity - 1, one row of n_kv = n_head_kv * head_dim floats per position (K after
/// bias, Q/K norm and RoPE; V after bias), f32 so that a step over unchanged rows reproduces the full
/// forward bit for bit. Grown with the rows a sequence holds (at least doubling, so a sequence that
/// appends block by block copies O(rows) in all), never sized for a context it does not use.
/// Memory: 2 x n_layer x capacity x n_kv x 4 bytes (LLaDA-8B, 512 positions: 1 GiB).
struct KvStorage final : forward::KvState::Storage {
  const void* owner_ = nullptr;
  int64_t capacity = 0;                  ///< positions each layer holds
  int64_t width = 0;                     ///< floats per row: n_head_kv * head_dim
  std::vector<std::vector<float>> k, v;  ///< per layer, capacity x width
  size_t bytes() const override {
    size_t n = 0;
    for (size_t il = 0; il < k.size(); ++il) n += (k[il].size() + v[il].size()) * sizeof(float);
    return n;
  }
  const void* owner() const override { return owner_; }
};

class CpuForward : public forward::Forward {
 public:
  /// `model` must outlive this object. Throws dllm::Error when a weight type has no matrix kernel,
  /// and what model::ForwardPlan throws (max_tokens or max_batch not positive).
  CpuForward(const model::Model& model, const ForwardOptions& options);
  ~CpuForward() override;

  /// Every segment as forward::Forward says: the projections and the FFN run over the rows of all
  /// segments in one matmul each, attention per (segment, head) over the segment's keys (its state,
  /// or its own rows) within each row's mask range, the LM head per segment. Same inputs give
  /// bit-identical outputs whatever the thread count and whatever else is in the pass. Not
  /// reentrant: one forward() at a time per object.
  void forward(std::span<const forward::Segment> segments) override;
  int64_t n_vocab() const override;
  /// K/V states and masks; max_batch x max_tokens rows and any number of segments per pass.
  forward::Capabilities capabilities() const override;

  /// Threads forward() runs on (ForwardOptions::n_threads resolved).
  int n_threads() const;
  /// The kernel path in use (ForwardOptions::isa resolved).
  Isa isa() const;
  /// ForwardOptions::max_tokens.
  int64_t max_tokens() const;
  /// ForwardOptions::max_batch.
  int max_batch() const;
  /// Bytes of the activation buffers now: 0 before the first pass, then what the largest pass needed.
  size_t buffer_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::cpu
