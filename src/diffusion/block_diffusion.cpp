// LLaDA2.x's block-diffusion loop (HF modeling_llada2_moe.py `generate`, loop.h): the canvas is whole
// blocks of block_length from position 0 (canvas_length); the blocks from the one holding the prompt's
// end run in order, each for at most `steps` steps (capped at max_tokens, HF's minimal_topk 1), step i
// committing block_transfer_counts(block_length, steps)[i] positions or more (Select::kThresholdOrTopk)
// until the block has no mask. After a block that holds an end token in the answer the run stops (HF:
// `if (x[0, prompt_length:current_window_end] == eos_id).any(): break`); a step's own early stop is the
// sampler's (sampler.cpp).
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
        b_(prompt_len / p.block_length) {}

  std::optional<StepPlan> next(const CanvasView& c) override {
    for (;;) {
      if (b_ >= n_blocks_) return std::nullopt;
      const ActiveBlock block{b_, b_ * block_length_, (b_ + 1) * block_length_};
      std::vector<int32_t> positions = i_ < static_cast<int64_t>(counts_.size())
                                           ? c.masked_in(block.begin, block.end)
                                           : std::vector<int32_t>{};
      if (positions.empty()) {
        // The block is done: stop when the answer so far holds an end token.
        for (int64_t j = prompt_len_; j < block.end; ++j)
          if (std::find(end_ids_.begin(), end_ids_.end(), c.canvas[j]) != end_ids_.end()) return finish();
        ++b_;
        i_ = 0;
        continue;
      }
      StepPlan s;
      s.positions = std::move(positions);
      s.rng_step = rng_step_;
      s.select = Select::kThresholdOrTopk;
      s.k = counts_[static_cast<size_t>(i_)];
      s.block = block;
      return s;
    }
  }

  void accepted() override {
    ++i_;
    ++rng_step_;
  }

 private:
  std::optional<StepPlan> finish() {
    b_ = n_blocks_;
    return std::nullopt;
  }

  const int64_t prompt_len_, block_length_, n_blocks_;
  const std::vector<int64_t> counts_;  ///< transfer counts of a block's steps
  const std::vector<int32_t> end_ids_;
  int64_t b_, i_ = 0, rng_step_ = 0;  ///< block, step within it, the rng step of the run
};

}  // namespace

std::unique_ptr<Loop> make_block_diffusion(const SamplerParams& p, int64_t prompt_len) {
  return std::make_unique<BlockDiffusion>(p, prompt_len);
}

}  // namespace dllm::diffusion
