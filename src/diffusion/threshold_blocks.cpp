// Fast-dLLM's confidence-threshold loop (NVlabs/Fast-dLLM get_transfer_index with a threshold,
// loop.h): blocks of block_length after the prompt (LLaDA's, or Dream's block sampler with its last
// block possibly shorter and 0 meaning the whole answer), each stepped until it has no mask; a step
// commits every masked position of the block with confidence >= threshold, and at least the most
// confident. LLaDA's rows score by their Gumbel-max row rule, Dream's by p(x0) (its
// confidence_threshold alg).
#include <algorithm>

#include "diffusion/loop.h"
#include "diffusion/sampler.h"

namespace dllm::diffusion {

namespace {

class ThresholdBlocks final : public Loop {
 public:
  ThresholdBlocks(const SamplerParams& p, int64_t prompt_len)
      : prompt_len_(prompt_len),
        end_(prompt_len + p.max_tokens),
        block_length_(p.block_length > 0 ? std::min(p.block_length, p.max_tokens) : p.max_tokens),
        llada_(p.schedule == Schedule::kBlocks) {}

  std::optional<StepPlan> next(const CanvasView& c) override {
    for (;;) {
      if (!in_block_) {
        const int64_t begin = prompt_len_ + b_ * block_length_;
        if (begin >= end_) return std::nullopt;
        block_ = {b_, begin, std::min(end_, begin + block_length_)};
        in_block_ = true;
      }
      std::vector<int32_t> positions = c.masked_in(block_.begin, block_.end);
      if (positions.empty()) {
        ++b_;
        in_block_ = false;
        continue;
      }
      StepPlan s;
      s.positions = std::move(positions);
      s.rng_step = rng_step_;
      s.select = Select::kThreshold;
      s.llada = llada_;
      s.block = block_;
      return s;
    }
  }

  void accepted() override { ++rng_step_; }

 private:
  const int64_t prompt_len_, end_, block_length_;
  const bool llada_;
  int64_t b_ = 0, rng_step_ = 0;
  bool in_block_ = false;
  ActiveBlock block_;
};

}  // namespace

std::unique_ptr<Loop> make_threshold_blocks(const SamplerParams& p, int64_t prompt_len) {
  return std::make_unique<ThresholdBlocks>(p, prompt_len);
}

}  // namespace dllm::diffusion
