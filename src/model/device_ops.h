// The operations a device implements for model::ForwardDriver, which runs the model through them: the
// driver owns the layer loop, the segments, their K/V states and the buffer sizes; a device owns its
// weights, its activation buffers and its kernels. One pass's rows are laid out by the driver
// (PassLayout) and every operation works on all of them at once:
//
//   embed                      x = token_embd[token of each row]
//   per layer il:
//     norm(kAttention)         x += the pending block output; h = RMSNorm(x) * attn_norm (+ its
//                              rounding for the matrices that read it)
//     project(kQkv)            q, k, v = h Wq, h Wk, h Wv
//     qk_norm_rope             + biases, per-head RMSNorm of q and k, RoPE at each row's position
//     attention                the rows' K/V into their segments' states; each row over its keys
//     project(kO)              pending = attention output Wo
//     norm(kFfn)               x += pending; h = RMSNorm(x) * ffn_norm
//     ffn | moe_ffn            pending = the layer's FFN of h (layer_desc.h FfnKind; kGegluDenseMoe:
//                              ffn, then moe_ffn, which completes the block)
//   lm_head                    logits of the requested rows = (RMSNorm(x + pending) * output_norm) Woutput
//
// A device may hold its own notion of "pending" (the CPU adds it inside the next norm). Operations
// never throw on checked inputs: the driver checks everything before the first one runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "forward/pass.h"

namespace dllm::model {

/// One segment's place in a pass.
struct PassSegment {
  int64_t row0 = 0;    ///< its first activation row
  int64_t n_rows = 0;  ///< its rows: positions first .. first + n_rows - 1
  int64_t first = 0;
  /// Its rows' keys: positions 0 .. n_keys - 1 of its K/V state (after this pass's rows are written
  /// into it), or without a state its own rows (n_keys = n_rows, activation rows row0 ..).
  int64_t n_keys = 0;
  forward::KvState* kv = nullptr;
  forward::MaskRule mask;
  int64_t head_row0 = 0;  ///< its first LM-head row
  std::span<const int32_t> logit_rows;
  float* logits = nullptr;           ///< logit_rows.size() x n_vocab
  std::span<const float> self_cond;  ///< forward::Segment::self_cond
  float self_cond_scale = 1.0f;
};

/// The rows of one pass: every segment's rows one after another (activation rows), and the LM-head
/// rows (the requested logit rows, segment by segment).
struct PassLayout {
  std::vector<PassSegment> segs;
  int64_t n_rows = 0;              ///< activation rows
  int64_t n_head_rows = 0;         ///< LM-head rows
  int64_t max_keys = 0;            ///< the most keys any segment's rows read
  std::vector<int32_t> tokens;     ///< n_rows: token id of each activation row
  std::vector<int32_t> positions;  ///< n_rows: absolute position of each activation row
  std::vector<int32_t> row_seg;    ///< n_rows: the segment of each activation row
  std::vector<int32_t> head_rows;  ///< n_head_rows: the activation row of each LM-head row
  std::vector<int32_t> head_seg;   ///< n_head_rows: the segment of each LM-head row
  /// Per sliding window (0: none) used by some layer: the key range of every activation row within
  /// its segment's keys, or empty when every row of the pass sees all its keys (no mask applies).
  struct WindowRanges {
    int64_t window = 0;
    std::vector<forward::KeyRange> ranges;
  };
  std::vector<WindowRanges> ranges;

  /// Key ranges of the rows of segment `s` on a layer with sliding window `window`, or nullptr when
  /// they all see every key (the unmasked kernels).
  const forward::KeyRange* key_ranges(int64_t window, size_t s) const;
};

/// Which projection (device_ops.h header).
enum class Projection { kQkv, kO };
/// Which norm: before attention (attn_norm) or before the FFN (ffn_norm).
enum class NormSite { kAttention, kFfn };

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  /// What this device runs (forward::Capabilities): K/V states, masks, rows and segments per pass.
  virtual forward::Capabilities capabilities() const = 0;
  virtual int64_t n_vocab() const = 0;
  /// The state was made by this device for this model (KvState::Storage::owner).
  virtual const void* kv_owner() const = 0;

  /// Buffers for the pass `p` (grown when smaller than it needs; never shrunk).
  virtual void reserve(const PassLayout& p) = 0;
  /// Memory in `kv` for positions below `rows`, made on the first call, grown (keeping the rows held).
  virtual void reserve_kv(forward::KvState& kv, int64_t rows) = 0;

  virtual void embed(const PassLayout& p) = 0;
  virtual void norm(const PassLayout& p, size_t il, NormSite site) = 0;
  virtual void project(const PassLayout& p, size_t il, Projection which) = 0;
  virtual void qk_norm_rope(const PassLayout& p, size_t il) = 0;
  virtual void attention(const PassLayout& p, size_t il) = 0;
  virtual void ffn(const PassLayout& p, size_t il) = 0;
  virtual void moe_ffn(const PassLayout& p, size_t il) = 0;
  virtual void lm_head(const PassLayout& p) = 0;
};

}  // namespace dllm::model
