// Dream's timestep loop (Dream generation_utils.py `_sample`, loop.h): steps over timesteps
// linspace(1, eps, steps + 1); the whole answer is one block. alg origin reveals each masked position
// with probability 1 - s/t (torch.rand(...) < p_transfer; the draws do not depend on the logits, so a
// step that reveals nothing skips its forward pass); the other algs commit int(masks * (1 - s/t)) of
// them (all on the last step), ranked by the alg's confidence, or drawn by it with alg_temp > 0.
#include "diffusion/loop.h"
#include "diffusion/rng.h"
#include "diffusion/sampler.h"

namespace dllm::diffusion {

namespace {

DreamConfidence confidence_of(DreamAlg alg) {
  switch (alg) {
    case DreamAlg::kTopkMargin:
      return DreamConfidence::kMargin;
    case DreamAlg::kEntropy:
      return DreamConfidence::kNegEntropy;
    default:
      return DreamConfidence::kProb;
  }
}

class DreamTimesteps final : public Loop {
 public:
  DreamTimesteps(const SamplerParams& p, int64_t prompt_len)
      : p_(p), ts_(dream_timesteps(p.steps, p.eps)), block_{0, prompt_len, prompt_len + p.max_tokens} {}

  std::optional<StepPlan> next(const CanvasView& c) override {
    for (; i_ < p_.steps && c.masks_left > 0; ++i_) {
      std::vector<int32_t> positions = c.masked_in(block_.begin, block_.end);
      StepPlan s;
      s.rng_step = i_;
      s.block = block_;
      if (p_.alg == DreamAlg::kOrigin) {
        const float pt = dream_transfer_probability(i_, ts_);
        for (int32_t pos : positions)
          if (Rng::stream(p_.seed, RngPurpose::kOriginTransfer, i_, pos).uniform_open() <
              static_cast<double>(pt))
            s.positions.push_back(pos);
        if (s.positions.empty()) continue;
        s.select = Select::kAll;
        return s;
      }
      const int64_t k = dream_transfer_count(c.masks_left, i_, ts_);
      if (k <= 0)
        continue;  // topk with k = 0 is skipped by the reference too (`if number_transfer_tokens > 0`)
      s.positions = std::move(positions);
      s.select = p_.alg_temp > 0 ? Select::kMultinomial : Select::kTopk;
      s.k = k;
      s.confidence = confidence_of(p_.alg);
      return s;
    }
    return std::nullopt;
  }

  void accepted() override { ++i_; }

 private:
  const SamplerParams& p_;
  const std::vector<float> ts_;
  const ActiveBlock block_;  ///< the whole answer (a cache reuses the prompt's K/V)
  int64_t i_ = 0;            ///< the timestep
};

}  // namespace

std::unique_ptr<Loop> make_dream_timesteps(const SamplerParams& p, int64_t prompt_len) {
  return std::make_unique<DreamTimesteps>(p, prompt_len);
}

}  // namespace dllm::diffusion
