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
  /// Activation rows logits_packed() runs in one forward pass (packed_rows() of its requests
  /// summed); 0: no packed pass (logits_packed runs the requests one after another).
  int64_t max_packed_rows = 0;
};

/// Which LogitsSource call a step's forward pass is.
enum class ForwardKind {
  kFull,     ///< logits(): the whole canvas, nothing stored (also CFG's pair: logits_batch())
  kRefresh,  ///< logits_cached(refresh = true): the full forward, storing every position's K/V
  kWindow,   ///< logits_cached(refresh = false): the window against the K/V of the last refresh
};

/// The forward pass one step of a Sequence (sampler.h) needs. Spans and `out` point into the
/// Sequence and stay valid until its accept().
struct ForwardRequest {
  ForwardKind kind = ForwardKind::kFull;
  std::span<const int32_t> canvas;  ///< prompt + max_tokens positions
  /// CFG (cfg_scale > 0): the canvas with every prompt position set to mask_id; the two run as one
  /// batch (logits_batch) and out receives 2 x rows.size() x n_vocab, the canvas's rows first.
  /// Empty otherwise.
  std::span<const int32_t> uncond;
  /// Model rows whose logits are wanted, distinct and increasing; within the window for kWindow.
  std::span<const int32_t> rows;
  int64_t window_begin = 0, window_end = 0;  ///< kRefresh / kWindow: the block's window
  /// Where the logits go: n_canvases() x rows.size() x n_vocab floats, row-major, vocab contiguous.
  float* out = nullptr;
  int64_t n_canvases() const { return uncond.empty() ? 1 : 2; }
};

/// One request of a packed pass (LogitsSource::logits_packed) and the KV cache slot its cached
/// steps use: slot i holds the K/V of one sequence from its refresh to its window steps; the caller
/// gives each sequence it interleaves a slot of its own.
struct PackedRequest {
  const ForwardRequest* request = nullptr;
  int64_t cache_slot = 0;
};

class LogitsSource;

/// Runs one request on `model`: logits(), logits_cached() or, for a CFG pair, logits_batch().
void run_request(LogitsSource& model, const ForwardRequest& request);

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

  /// Several requests of different canvases, lengths and kinds in one forward pass (the batching
  /// engine), each request's logits into its own out, each as if it ran alone. A backend overrides
  /// it (support().max_packed_rows > 0). The default runs them one after another through
  /// run_request and ignores cache_slot: right for a source without cached steps (whose
  /// logits_cached is a full pass), wrong for one with a single cache given several sequences.
  virtual void logits_packed(std::span<const PackedRequest> batch);

  /// Activation rows a request occupies in a packed pass: the canvas (each of a CFG pair), or the
  /// window of a cached step.
  static int64_t packed_rows(const ForwardRequest& r) {
    const int64_t per = r.kind == ForwardKind::kWindow ? r.window_end - r.window_begin
                                                       : static_cast<int64_t>(r.canvas.size());
    return per * r.n_canvases();
  }
};

}  // namespace dllm::diffusion
