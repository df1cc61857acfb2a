// What the samplers ask of a model: one call, forward(segments). A segment is one sequence's part of a
// pass: the rows it computes (consecutive positions), where its keys come from (its K/V state, or the
// rows alone), which keys each row sees (a mask rule), and which rows need logits. One call serves
// `dllm logits` (one segment), a denoising step (one, or two for classifier-free guidance), a
// Fast-dLLM refresh or window step (a segment with a state) and the engine's packed batches (a
// segment per active sequence). The samplers depend on this header only, so tests drive them with
// scripted logits, and each device implements it (cpu::CpuForward, cuda::GpuForward, through
// model::ForwardDriver).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "forward/kv_state.h"
#include "forward/mask.h"

namespace dllm::forward {

/// One sequence's part of a forward pass. Spans and pointers must stay valid during forward().
struct Segment {
  /// Token ids of the rows computed: positions first .. first + tokens.size() - 1.
  std::span<const int32_t> tokens;
  int64_t first = 0;  ///< absolute position of tokens[0]
  /// The sequence's K/V: the rows' K/V are written into it at their positions, and the keys are every
  /// row it holds after that (0 .. max(rows(), first + tokens.size()) - 1; first <= rows()). nullptr:
  /// nothing is kept and the keys are these rows alone (then first must be 0).
  KvState* kv = nullptr;
  MaskRule mask;  ///< which of the keys each row sees
  /// Positions whose logits are wanted, among the rows computed; logits row j is logit_rows[j].
  std::span<const int32_t> logit_rows;
  /// logit_rows.size() x n_vocab f32, row-major (vocab contiguous): the UNSHIFTED logits.
  float* logits = nullptr;
  /// DiffusionGemma's self-conditioning: the previous step's raw logits of the canvas rows (the rows
  /// at positions >= mask.prompt, in order; n_vocab each), softmaxed after scaling by
  /// self_cond_scale (1 / the previous step's temperature); empty: none (a block's first step). May
  /// be the same memory as `logits`: a forward reads it before it writes any logits.
  std::span<const float> self_cond;
  float self_cond_scale = 1.0f;

  int64_t n_rows() const { return static_cast<int64_t>(tokens.size()); }
};

/// What a Forward runs; the rest it refuses (forward() throws) or, for segments, runs one pass each.
struct Capabilities {
  bool kv_state = false;  ///< segments may carry a KvState
  bool masks = false;     ///< masks other than full
  /// Activation rows one pass holds (the segments' rows summed): a caller packing sequences stays
  /// within it. At least the longest sequence.
  int64_t max_rows = 0;
  /// Segments one pass runs together; more run one pass per segment (the same logits, slower).
  int64_t max_segments = 1;
};

class Forward {
 public:
  virtual ~Forward() = default;

  /// Logit rows per position (the LM head's output size; may exceed the tokenizer's vocabulary, e.g.
  /// Dream: 152064 rows for 151667 tokens).
  virtual int64_t n_vocab() const = 0;
  virtual Capabilities capabilities() const = 0;

  /// Runs the segments and writes each one's logits. Each segment's logits (and K/V state) are
  /// bit-identical to those of a pass of that segment alone: nothing is shared between segments.
  /// Throws dllm::Error before any compute for inputs the device cannot run or that are wrong
  /// (token ids outside the vocabulary, positions past the model's context, logit rows outside the
  /// rows computed, a state with a gap before `first`, one state in two segments, more rows than
  /// capabilities().max_rows).
  virtual void forward(std::span<const Segment> segments) = 0;
};

}  // namespace dllm::forward
