// LLaDA2.x (general.architecture "llada2"; inclusionAI/LLaDA2.0-mini, -flash, LLaDA2.1 through llama.cpp
// PR #17454's converter): llama.cpp's merged bailingmoe2 layout and keys under `llada2.`
// (src/models/bailingmoe2.cpp, conversion/bailingmoe.py):
//   - fused attn_qkv, rows Q | K | V (bound as three row ranges of the one tensor, model.cpp);
//   - per-head RMSNorm of Q and K before NEOX RoPE over the first rope.dimension_count dims; GQA;
//   - a dense SwiGLU FFN on the first leading_dense_block_count layers, routed experts after:
//     sigmoid scores (expert_gating_func 2), the selection bias exp_probs_b.bias added for the choice
//     only, group-limited top-k (expert_group_count groups ranked by the sum of their two best biased
//     scores, expert_group_used_count kept), the unbiased scores of the chosen experts normalised
//     (expert_weights_norm) and times expert_weights_scale, plus expert_shared_count shared experts on
//     the same input (llama.cpp build_moe_ffn; HF modeling_llada2_moe.py LLaDA2MoeGate agrees).
// Attention is block-causal over blocks of 32 counted from position 0 (HF generate(), forward/mask.h),
// and the model runs the block-diffusion loop (diffusion/block_diffusion.cpp). Unshifted logits
// (the converter writes diffusion.shift_logits = false).
#include <string>

#include "base/error.h"
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

void configure(const gguf::GgufFile& file, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.rope_mode = RopeMode::kNeox;
  c.has_qk_norm = true;
  c.fused_qkv = true;
  read_expert_keys(file, c);
  if (file.find(a + "leading_dense_block_count")) {
    const uint64_t lead = file.get_u64(a + "leading_dense_block_count");
    if (lead > static_cast<uint64_t>(c.n_layer))
      throw Error(a + "leading_dense_block_count (" + std::to_string(lead) + ") exceeds " + a +
                  "block_count (" + std::to_string(c.n_layer) + ")");
    c.n_layer_dense_lead = static_cast<int64_t>(lead);
  }
  // llama.cpp LLAMA_EXPERT_GATING_FUNC_TYPE: 1 softmax, 2 sigmoid (bailingmoe2's default).
  const uint64_t gating = file.find_u64(a + "expert_gating_func").value_or(2);
  if (gating != 2)
    throw Error(a + "expert_gating_func is " + std::to_string(gating) +
                ": llada2 runs sigmoid gating (2) only");
  c.expert_gating = ExpertGating::kSigmoid;
  c.expert_selection_bias = true;  // blk.N.exp_probs_b.bias: required, as llama.cpp's loader has it
  if (file.find(a + "expert_group_count")) {
    c.n_expert_groups = positive_key(file, a + "expert_group_count");
    c.n_group_used = positive_key(file, a + "expert_group_used_count");
    const int64_t per_group = c.n_expert / c.n_expert_groups;
    if (c.n_expert_groups > 64)  // cpu::moe_route_row_sigmoid ranks at most 64 groups (LLaDA2: 8)
      throw Error(a + "expert_group_count (" + std::to_string(c.n_expert_groups) + ") exceeds 64");
    if (c.n_expert % c.n_expert_groups != 0 || per_group < 2)
      throw Error(a + "expert_group_count (" + std::to_string(c.n_expert_groups) + ") must divide " + a +
                  "expert_count (" + std::to_string(c.n_expert) + ") into groups of at least 2 experts");
    if (c.n_group_used > c.n_expert_groups)
      throw Error(a + "expert_group_used_count (" + std::to_string(c.n_group_used) + ") exceeds " + a +
                  "expert_group_count (" + std::to_string(c.n_expert_groups) + ")");
    if (c.n_expert_used > c.n_group_used * per_group)
      throw Error(a + "expert_used_count (" + std::to_string(c.n_expert_used) + ") exceeds the " +
                  std::to_string(c.n_group_used * per_group) + " experts of the " + a +
                  "expert_group_used_count groups kept");
  }
  if (file.find(a + "expert_shared_count")) c.n_expert_shared = positive_key(file, a + "expert_shared_count");
  if (file.find(a + "expert_shared_feed_forward_length"))
    c.n_ff_shexp = positive_key(file, a + "expert_shared_feed_forward_length");
  c.expert_weights_norm = file.find_bool(a + "expert_weights_norm").value_or(false);
  c.expert_weights_scale = file.find_f32(a + "expert_weights_scale").value_or(1.0f);
  if (!(c.expert_weights_scale > 0.0f) || !(c.expert_weights_scale < 1e6f))
    throw Error(a + "expert_weights_scale must be a positive number");
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(false);
  c.block_length = 32;
}

}  // namespace

const Architecture kLlada2Arch = {"llada2", configure, routed_layer, DefaultLoop::kBlockDiffusion};

}  // namespace dllm::model
