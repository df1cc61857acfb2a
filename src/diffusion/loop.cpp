// make_loop and CanvasView (loop.h).
#include "diffusion/loop.h"

#include "diffusion/sampler.h"

namespace dllm::diffusion {

std::vector<int32_t> CanvasView::masked_in(int64_t begin, int64_t end) const {
  std::vector<int32_t> v;
  for (int64_t i = begin; i < end; ++i)
    if (canvas[i] == mask_id) v.push_back(static_cast<int32_t>(i));
  return v;
}

std::unique_ptr<Loop> make_loop(const SamplerParams& p, int64_t prompt_len) {
  if (p.schedule == Schedule::kBlockDiffusion) return make_block_diffusion(p, prompt_len);
  if (p.threshold) return make_threshold_blocks(p, prompt_len);
  if (p.schedule == Schedule::kBlocks) return make_llada_blocks(p, prompt_len);
  return make_dream_timesteps(p, prompt_len);
}

}  // namespace dllm::diffusion
