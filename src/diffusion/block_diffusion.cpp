// LLaDA2.x's block-diffusion loop (HF modeling_llada2_moe.py `generate`, loop.h): the canvas is whole
// blocks of block_length from position 0 (canvas_length); the blocks from the one holding the prompt's
// end run in order, each for at most `steps` steps (capped at max_tokens, HF's minimal_topk 1), step i
// committing block_transfer_counts(block_length, steps)[i] positions or more (Select::kThresholdOrTopk)
// until the block has no mask. After a block that holds an end token in the answer the run stops (HF:
// `if (x[0, prompt_length:current_window_end] == eos_id).any(): break`); a step's own early stop is the
// sampler's (sampler.cpp).
// With LLaDA2.1's editing (SGLang joint_threshold.py `run`, per block): every step scores the block's
// masked positions and its decoded non-prompt ones (Select::kJointThreshold); the block ends when a
// step changed nothing (the block's tokens equal those before it), or once max_post_edit_steps steps
// have run without a mask (SGLang runs one more pass and discards it; the tokens are the same).
#include <algorithm>

#include "diffusion/loop.h"
#include "diffusion/sampler.h"

namespace dllm::diffusion {

namespace {

class BlockDiffusion final : public Loop {
 public:
  BlockDiffusion(const SamplerParams& p, int64_t prompt_len)
      : prompt_len_(prompt_len),
        block_length_(p.block_length),
        n_blocks_(canvas_length(p, prompt_len) / p.block_length),
        counts_(block_transfer_counts(p.block_length, std::min(p.steps, p.max_tokens))),
        end_ids_(p.end_ids),
        editing_(p.edit_threshold.has_value()),
        max_post_edit_(p.max_post_edit_steps),
        b_(prompt_len / p.block_length) {}

  std::optional<StepPlan> next(const CanvasView& c) override {
    for (;;) {
      if (b_ >= n_blocks_) return std::nullopt;
      const ActiveBlock block{b_, b_ * block_length_, (b_ + 1) * block_length_};
      std::vector<int32_t> positions = editing_ ? edit_positions(c, block)
                                       : i_ < static_cast<int64_t>(counts_.size())
                                           ? c.masked_in(block.begin, block.end)
                                           : std::vector<int32_t>{};
      if (positions.empty()) {
        // The block is done: stop when the answer so far holds an end token.
        for (int64_t j = prompt_len_; j < block.end; ++j)
          if (std::find(end_ids_.begin(), end_ids_.end(), c.canvas[j]) != end_ids_.end()) return finish();
        ++b_;
        i_ = 0;
        post_edit_ = 0;
        last_.clear();
        continue;
      }
      StepPlan s;
      s.positions = std::move(positions);
      s.rng_step = rng_step_;
      s.select = editing_ ? Select::kJointThreshold : Select::kThresholdOrTopk;
      s.k = editing_ ? 0 : counts_[static_cast<size_t>(i_)];
      s.block = block;
      return s;
    }
  }

  void accepted() override {
    ++i_;
    ++rng_step_;
  }

 private:
  /// Editing: the block's positions a step scores (its masked ones and its decoded ones after the
  /// prompt), or none when the block is done: the last step changed nothing, or it has run
  /// max_post_edit_steps steps without a mask.
  std::vector<int32_t> edit_positions(const CanvasView& c, const ActiveBlock& block) {
    const auto tokens =
        c.canvas.subspan(static_cast<size_t>(block.begin), static_cast<size_t>(block_length_));
    if (i_ > 0 && std::equal(tokens.begin(), tokens.end(), last_.begin(), last_.end())) return {};
    const bool masked = !c.masked_in(block.begin, block.end).empty();
    if (!masked && post_edit_++ >= max_post_edit_) return {};
    last_.assign(tokens.begin(), tokens.end());
    std::vector<int32_t> positions;
    for (int64_t j = std::max(block.begin, prompt_len_); j < block.end; ++j)
      positions.push_back(static_cast<int32_t>(j));
    return positions;
  }

  std::optional<StepPlan> finish() {
    b_ = n_blocks_;
    return std::nullopt;
  }

  const int64_t prompt_len_, block_length_, n_blocks_;
  const std::vector<int64_t> counts_;  ///< transfer counts of a block's steps
  const std::vector<int32_t> end_ids_;
  const bool editing_;
  const int64_t max_post_edit_;
  int64_t b_, i_ = 0, rng_step_ = 0;  ///< block, step within it, the rng step of the run
  int64_t post_edit_ = 0;             ///< editing: steps of this block run without a mask
  std::vector<int32_t> last_;         ///< editing: the block's tokens before its last step
};

}  // namespace

std::unique_ptr<Loop> make_block_diffusion(const SamplerParams& p, int64_t prompt_len) {
  return std::make_unique<BlockDiffusion>(p, prompt_len);
}

}  // namespace dllm::diffusion
