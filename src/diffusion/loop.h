// The denoising loops as classes behind one interface: each says which step runs next (the masked
// positions it scores, the random-draw step, how it chooses among them, the block it works on) and
// moves on when the step is accepted. Sequence (sampler.h) owns one loop, the canvas and the sampling;
// the loop owns only its cursor. Steps that would commit nothing are skipped, as the references'
// `continue` does, so every step next() returns runs a forward pass.
//
//   LladaBlocks      ML-GSAI/LLaDA generate.py `generate`: blocks of block_length after the prompt,
//                    steps / blocks steps each, get_num_transfer_tokens of the block's masks per step
//   DreamTimesteps   Dream generation_utils.py `_sample`: timesteps linspace(1, eps, steps + 1) over the
//                    whole answer, alg origin (each position with probability 1 - s/t) or top-k
//   ThresholdBlocks  Fast-dLLM's confidence-threshold decoding (NVlabs/Fast-dLLM get_transfer_index
//                    with a threshold): per block, every masked position above the threshold and at
//                    least the most confident, until the block is full; LLaDA's rows or Dream's p(x0)
//   BlockDiffusion   LLaDA2.x's HF generate (modeling_llada2_moe.py): blocks of block_length counted from
//                    position 0 (the prompt's last P % B tokens share the first block), `steps` steps
//                    per block with block_transfer_counts; a step commits every masked position above
//                    the threshold when they are at least the step's count, else the count's most
//                    confident; after a block holding an end token the run stops. With LLaDA2.1's
//                    editing (SamplerParams::edit_threshold) a step scores the block's decoded
//                    positions too and a block ends when a step changes nothing
// DiffusionGemma's loop comes next, behind the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "diffusion/kv_policy.h"
#include "diffusion/row_ops.h"

namespace dllm::diffusion {

struct SamplerParams;

/// How a step picks the positions it commits among the scored ones.
enum class Select {
  kAll,          ///< Dream origin: every position drawn for the step
  kThreshold,    ///< Fast-dLLM: the most confident and every other one >= threshold
  kTopk,         ///< the k most confident
  kMultinomial,  ///< Dream alg_temp > 0: k drawn without replacement
  /// LLaDA2: every one > threshold when they are at least k, else the k most confident
  kThresholdOrTopk,
  /// LLaDA2.1: the masked ones > threshold (at least the most confident), and the decoded ones whose
  /// token would change with confidence > edit_threshold (token-to-token edits)
  kJointThreshold,
};

/// The step a loop runs next.
struct StepPlan {
  std::vector<int32_t> positions;  ///< masked positions scored this step, increasing
  int64_t rng_step = 0;            ///< the step index the random draws of this step use
  Select select = Select::kAll;
  int64_t k = 0;       ///< kTopk / kMultinomial: how many to commit
  bool llada = false;  ///< LLaDA's row rule (Gumbel-max, remasking); else Dream's (categorical, alg)
  DreamConfidence confidence = DreamConfidence::kProb;  ///< Dream: what the step ranks by
  ActiveBlock block;                                    ///< the block the step works on
};

/// What a loop sees of the canvas: prompt + answer positions, which hold the mask id.
struct CanvasView {
  std::span<const int32_t> canvas;
  int64_t prompt_len = 0;
  int32_t mask_id = -1;
  int64_t masks_left = 0;
  /// The masked positions of [begin, end), increasing.
  std::vector<int32_t> masked_in(int64_t begin, int64_t end) const;
};

class Loop {
 public:
  virtual ~Loop() = default;
  /// The next step that runs a forward pass, or nullopt when the loop has none left.
  virtual std::optional<StepPlan> next(const CanvasView& canvas) = 0;
  /// The step next() returned last was run and committed.
  virtual void accepted() = 0;
};

/// The loop `p` asks for (threshold decoding, else its schedule's) over a prompt of prompt_len. p must
/// pass check_params.
std::unique_ptr<Loop> make_loop(const SamplerParams& p, int64_t prompt_len);

// The loops, one file each.
std::unique_ptr<Loop> make_llada_blocks(const SamplerParams& p, int64_t prompt_len);  // llada_blocks.cpp
std::unique_ptr<Loop> make_dream_timesteps(const SamplerParams& p,
                                           int64_t prompt_len);  // dream_timesteps.cpp
std::unique_ptr<Loop> make_threshold_blocks(const SamplerParams& p,
                                            int64_t prompt_len);  // threshold_blocks.cpp
std::unique_ptr<Loop> make_block_diffusion(const SamplerParams& p,
                                           int64_t prompt_len);  // block_diffusion.cpp

}  // namespace dllm::diffusion
