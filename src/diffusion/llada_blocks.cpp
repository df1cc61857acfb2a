// LLaDA's block loop (ML-GSAI/LLaDA generate.py `generate`, loop.h): the answer in blocks of
// block_length, each denoised in steps / blocks steps; get_num_transfer_tokens on the block's mask
// count (taken once at the block start, l.75-76) says how many of the block's masked positions each step
// commits, the most confident first (remasking low_confidence; random: a uniform draw per position).
#include "diffusion/loop.h"
#include "diffusion/sampler.h"

namespace dllm::diffusion {

namespace {

class LladaBlocks final : public Loop {
 public:
  LladaBlocks(const SamplerParams& p, int64_t prompt_len)
      : prompt_len_(prompt_len),
        block_length_(p.block_length),
        n_blocks_(p.max_tokens / p.block_length),
        steps_per_block_(p.steps / n_blocks_) {}

  std::optional<StepPlan> next(const CanvasView& c) override {
    for (;;) {
      if (!in_block_) {
        if (b_ >= n_blocks_) return std::nullopt;
        const int64_t begin = prompt_len_ + b_ * block_length_;
        block_ = {b_, begin, begin + block_length_};
        in_block_ = true;
        i_ = 0;
        counts_ = llada_transfer_counts(static_cast<int64_t>(c.masked_in(begin, block_.end).size()),
                                        steps_per_block_);
      }
      if (i_ >= static_cast<int64_t>(counts_.size())) {
        ++b_;
        in_block_ = false;
        continue;
      }
      // Positions after the block get confidence -inf (l.109) and committed ones are not masked
      // (l.111-112): the candidates are the block's masked positions. topk(k = 0) commits nothing.
      std::vector<int32_t> positions =
          counts_[i_] == 0 ? std::vector<int32_t>{} : c.masked_in(block_.begin, block_.end);
      if (positions.empty()) {
        ++i_;
        ++rng_step_;
        continue;
      }
      StepPlan s;
      s.positions = std::move(positions);
      s.rng_step = rng_step_;
      s.select = Select::kTopk;
      s.k = counts_[i_];
      s.llada = true;
      s.block = block_;
      return s;
    }
  }

  void accepted() override {
    ++i_;
    ++rng_step_;
  }

 private:
  const int64_t prompt_len_, block_length_, n_blocks_, steps_per_block_;
  int64_t b_ = 0, i_ = 0, rng_step_ = 0;  ///< block, step within it, the rng step of the run
  bool in_block_ = false;
  ActiveBlock block_;
  std::vector<int64_t> counts_;  ///< the block's transfer counts
};

}  // namespace

std::unique_ptr<Loop> make_llada_blocks(const SamplerParams& p, int64_t prompt_len) {
  return std::make_unique<LladaBlocks>(p, prompt_len);
}

}  // namespace dllm::diffusion
