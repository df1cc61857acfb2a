// The bidirectional transformer forward pass on the CPU: prompt + canvas tokens in, logits for the
// requested rows out. No causal mask. No allocation inside forward(): every buffer is sized in the
// constructor for `max_batch` sequences of `max_tokens`. forward_window() adds Fast-dLLM's
// approximate KV cache (a step recomputes only a window of positions; the others' K/V come from the
// last refresh), forward_batch() runs several canvases of one length through the matmuls together
// (classifier-free guidance), forward_packed() several canvases of any lengths and kinds together
// (the batching engine).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/isa.h"
#include "cpu/threads.h"
#include "model/config.h"

namespace dllm::model {
class Model;
}  // namespace dllm::model

namespace dllm::cpu {

struct ForwardOptions {
  int64_t max_tokens = 0;  ///< longest token sequence forward() will see (prompt + canvas)
  int n_threads = 0;       ///< 0: physical cores (physical_core_count())
  /// Kernel path for the Q4_K / Q6_K weight matrices; nullopt: choose_isa("") (base/isa.h: the
  /// $DLLM_CPU_ISA override, else the fastest path this CPU supports).
  std::optional<Isa> isa;
  /// Diagnostics only: forces a RoPE pairing instead of the architecture's (tests use it to show
  /// that a convention error is caught by the reference-logits comparison). nullopt: the model's.
  std::optional<model::RopeMode> rope_mode;
  /// Sequences forward_batch() may run together (classifier-free guidance needs 2). Buffers scale
  /// with max_batch x max_tokens.
  int max_batch = 1;
};

/// Per-layer K and V of every position of one canvas, as the last refresh step of
/// CpuForward::forward_window computed them (Fast-dLLM's KV cache, NVlabs/Fast-dLLM
/// llada/generate.py generate_with_prefix_cache / generate_with_dual_cache). f32 (so a step that
/// changed nothing reproduces the full forward bit for bit): k and v each hold
/// n_layer x capacity x (n_head_kv * head_dim) floats, layer-major, one row per position, K after
/// bias and RoPE, V after bias. capacity is the longest canvas refreshed into this cache, not the
/// forward's max_tokens: a server sized for 4096-token canvases keeps a 100-token request's cache at
/// 100 positions. Memory: 2 x n_layer x capacity x n_head_kv x head_dim x 4 bytes (LLaDA-8B, 512
/// positions: 1 GiB). Sized on the first refresh, grown by a longer one; one cache per canvas.
struct KvCache {
  int64_t n_tokens = 0;  ///< canvas length at the last refresh; 0 = never refreshed
  int64_t capacity = 0;  ///< positions per layer that k and v hold (>= n_tokens)
  std::vector<float> k, v;
  size_t bytes() const { return (k.size() + v.size()) * sizeof(float); }
};

/// One request of a packed pass (CpuForward::forward_packed): n_seq canvases of one length (2: a
/// CFG pair) run as forward_batch would, or one canvas's cached step (cache set) as forward_window
/// would.
struct PackedSeq {
  std::span<const int32_t> tokens;  ///< n_seq x n, one canvas after another
  int64_t n_seq = 1;
  std::span<const int32_t> rows;  ///< positions whose logits are wanted (within the window for a cached step)
  float* logits = nullptr;        ///< n_seq x rows.size() x n_vocab, row-major
  KvCache* cache = nullptr;       ///< nullptr: a full forward, nothing stored; else a cached step (n_seq 1)
  bool refresh = false;           ///< with cache: forward_window's refresh
  int64_t window_begin = 0, window_end = 0;  ///< with cache and not refresh: the window
};

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

  /// forward() over n_seq sequences of one length n: tokens holds them one after another
  /// (n_seq x n), rows are positions within a sequence and apply to each, and logits receives
  /// n_seq x rows.size() x n_vocab (sequence-major). The projections and the FFN run over all
  /// n_seq x n rows in one matmul (one pass over the weights); attention stays within a sequence.
  /// Each sequence's logits are bit-identical to forward() of that sequence alone. Throws
  /// dllm::Error as forward(), and when n_seq is not in [1, max_batch] or tokens.size() is not a
  /// multiple of n_seq.
  void forward_batch(std::span<const int32_t> tokens, int64_t n_seq, std::span<const int32_t> rows,
                     float* logits);

  /// Fast-dLLM's cached step. refresh = true: the full forward() (window ignored) that also stores
  /// every layer's K and V of every position in `cache`. refresh = false: only the positions
  /// [window_begin, window_end) run through the layers; their fresh K/V replace the cache's slots and
  /// their attention reads every position's K/V from the cache, so positions outside the window
  /// contribute what they were at the last refresh (stale if any token changed since: approximate).
  /// Tokens outside the window are not read. rows must lie in the window. With the prefix cache the
  /// window is [block start, n); with the dual cache it is the block. Throws dllm::Error as forward(),
  /// and when the window is empty or outside [0, n), a row is outside the window, or the cache was
  /// not refreshed for a canvas of this length.
  void forward_window(std::span<const int32_t> tokens, int64_t window_begin, int64_t window_end,
                      std::span<const int32_t> rows, float* logits, KvCache& cache, bool refresh);

  /// Several requests of different lengths and kinds in one pass: the projections and the FFN run
  /// over the activation rows of all of them in one matmul each (one pass over the weights),
  /// attention stays within each canvas (its own keys, or its own cache), the LM head runs per
  /// request. Each request's logits (and cache) are bit-identical to those of forward_batch /
  /// forward_window of that request alone: nothing in the pass depends on the other requests. The
  /// activation rows of all requests (n_seq x n, or the window's width) must fit max_batch x
  /// max_tokens. Throws dllm::Error, before any compute, as forward_batch / forward_window for each
  /// request, when n_seq != 1 with a cache, when one cache appears twice, when the rows do not fit,
  /// or when `seqs` is empty.
  void forward_packed(std::span<const PackedSeq> seqs);

  /// Activation rows (of max_batch x max_tokens) a request occupies in a packed pass.
  static int64_t packed_rows(const PackedSeq& s);

  int64_t n_vocab() const;
  /// Threads forward() runs on (ForwardOptions::n_threads resolved).
  int n_threads() const;
  /// The kernel path in use (ForwardOptions::isa resolved).
  Isa isa() const;
  /// ForwardOptions::max_tokens.
  int64_t max_tokens() const;
  /// ForwardOptions::max_batch.
  int max_batch() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::cpu
