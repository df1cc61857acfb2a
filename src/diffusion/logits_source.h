// How the diffusion samplers see the model: a function from a canvas to logits for chosen rows.
// The samplers depend only on this interface (and src/base), so tests drive them with scripted logits
// and the CLI's backends (src/cli/backend.cpp) put the CPU or GPU forward pass behind it. Not a model:
// no shift, no masking here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dllm::diffusion {

/// What a LogitsSource runs natively. For the rest LogitsSource's defaults stand in, exactly but
/// without the saving: a cached step becomes a full pass, a batch one pass per canvas.
struct SourceSupport {
  bool cached_steps = false;  ///< logits_cached() reuses stored K/V (Fast-dLLM's approximation)
  int64_t max_batch = 1;      ///< canvases logits_batch() runs through one forward pass
};

class LogitsSource {
 public:
  virtual ~LogitsSource() = default;

  /// Logit rows per position (the LM head's output size; may exceed the tokenizer's vocabulary,
  /// e.g. Dream: 152064 rows for 151667 tokens).
  virtual int64_t n_vocab() const = 0;

  /// What this source runs natively (the defaults: neither cached steps nor batches).
  virtual SourceSupport support() const { return {}; }

  /// Runs the model over the whole canvas (positions 0..canvas.size()-1, bidirectional) and writes
  /// the UNSHIFTED logits of positions rows[j] to out[j * n_vocab .. (j+1) * n_vocab): a
  /// rows.size() x n_vocab row-major f32 matrix (vocab contiguous). rows are distinct, in [0,
  /// canvas.size()), in increasing order. The sampler applies the Dream logit shift itself by asking
  /// for row i-1. May throw dllm::Error; the sampler lets it propagate.
  virtual void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) = 0;

  /// Fast-dLLM's cached step (--cache prefix|dual): refresh = true runs the full forward and stores
  /// every position's per-layer K/V; refresh = false recomputes only the positions
  /// [window_begin, window_end) against the stored K/V of the others, so its logits are approximate
  /// whenever a token changed since the refresh. rows lie in the window (refresh: in the canvas).
  /// The default ignores the cache and calls logits() (exact): a source without a cache.
  virtual void logits_cached(std::span<const int32_t> canvas, std::span<const int32_t> rows,
                             int64_t window_begin, int64_t window_end, bool refresh, float* out) {
    (void)window_begin;
    (void)window_end;
    (void)refresh;
    logits(canvas, rows, out);
  }

  /// logits() for n canvases of one length (classifier-free guidance: the canvas and its
  /// prompt-masked copy), into out = n x rows.size() x n_vocab (canvas-major). A backend overrides it
  /// to run them through one forward pass; the default calls logits() once per canvas.
  virtual void logits_batch(std::span<const std::span<const int32_t>> canvases, std::span<const int32_t> rows,
                            float* out) {
    for (size_t i = 0; i < canvases.size(); ++i)
      logits(canvases[i], rows, out + i * rows.size() * static_cast<size_t>(n_vocab()));
  }
};

}  // namespace dllm::diffusion
