// Which rows a denoising step forwards and what its sequence's K/V state keeps between steps: the
// policies over forward::KvState (forward/kv_state.h). A loop asks its policy for each step's segment
// and tells it when the step was accepted; the policy owns the state, so a sequence's K/V lives and
// dies with the sequence.
//
//   KvNone            every step forwards the whole canvas, nothing kept (LLaDA generate.py, Dream), or
//                     under a block-causal mask the canvas up to the active block's end (LLaDA2's
//                     generate recomputes x[:(k+1)B] every step: later blocks cannot change it)
//   KvFastDllm        Fast-dLLM's approximate cache (NVlabs/Fast-dLLM llada/generate.py
//                     generate_with_prefix_cache / generate_with_dual_cache): the first step of a block
//                     recomputes every row into the state (refresh); the block's later steps forward
//                     a window, [block start, canvas end) (prefix) or the block (dual), against the
//                     state's other rows as the refresh left them. With the Dream logit shift the
//                     window starts one row earlier, so the block's first position has its row.
//   KvExactBlocks     exact reuse for block-causal models (LLaDA2.x): rows before the active block are
//                     written once, with their final tokens, and read by every later step; a step
//                     forwards the rows from the first one not yet final to the end of the active
//                     block, so a finished block's final tokens are folded into the first pass of
//                     the next block. Under the block-causal mask no row reads a later row, so the
//                     logits equal those of recomputing the whole prefix each step, bit for bit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "forward/pass.h"

namespace dllm::diffusion {

/// The block a step denoises: canvas positions [begin, end), `index` counting the blocks of the run.
struct ActiveBlock {
  int64_t index = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

class KvPolicy {
 public:
  virtual ~KvPolicy() = default;
  /// The forward pass of a step over `canvas` (spans into it) while `block` is denoised: the rows,
  /// their first position, the state and the mask. The caller sets logit_rows and logits, which must
  /// lie in the rows (a Fast-dLLM window holds the block; with the shift, from one row before).
  virtual forward::Segment segment(std::span<const int32_t> canvas, const ActiveBlock& block) = 0;
  /// The step whose segment() came last was run and its tokens committed.
  virtual void accepted(const ActiveBlock& block) { (void)block; }
  /// Whether the last segment() recomputes every row of the canvas into a state (a Fast-dLLM
  /// refresh: StepInfo::cache_refresh).
  bool refreshed() const { return refreshed_; }
  /// Bytes the state holds now.
  size_t kv_bytes() const { return kv_.bytes(); }

 protected:
  forward::KvState kv_;
  bool refreshed_ = false;
};

/// Every step the whole canvas under `mask` (a block-causal mask: up to the block's end), no state.
class KvNone final : public KvPolicy {
 public:
  explicit KvNone(forward::MaskRule mask = forward::MaskRule::full()) : mask_(mask) {}
  forward::Segment segment(std::span<const int32_t> canvas, const ActiveBlock& block) override;

 private:
  forward::MaskRule mask_;
};

/// Fast-dLLM's prefix (dual = false) or dual (dual = true) cache; `shift`: the Dream logit shift.
class KvFastDllm final : public KvPolicy {
 public:
  KvFastDllm(bool dual, bool shift) : dual_(dual), shift_(shift) {}
  forward::Segment segment(std::span<const int32_t> canvas, const ActiveBlock& block) override;
  void accepted(const ActiveBlock& block) override { cached_block_ = block.index; }

 private:
  bool dual_, shift_;
  int64_t cached_block_ = -1;  ///< the block of the last refresh that was accepted (-1: none)
};

/// Exact reuse under mask (a block-causal rule): rows below kept() are final in the state.
class KvExactBlocks final : public KvPolicy {
 public:
  explicit KvExactBlocks(forward::MaskRule mask) : mask_(mask) {}
  forward::Segment segment(std::span<const int32_t> canvas, const ActiveBlock& block) override;
  /// After the step, the rows before the block are final and held.
  void accepted(const ActiveBlock& block) override { kept_ = block.begin; }
  int64_t kept() const { return kept_; }

 private:
  forward::MaskRule mask_;
  int64_t kept_ = 0;
};

}  // namespace dllm::diffusion
