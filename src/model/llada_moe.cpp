// LLaDA-MoE (general.architecture "llada-moe"; inclusionAI/LLaDA-MoE-7B-A1B): per-head RMSNorm of Q and
// K before NEOX RoPE, every layer's FFN 64 routed experts with 8 used: softmax gating, no selection
// bias, no groups, no shared expert, the probabilities used as weights unnormalised (llama.cpp
// src/models/llada-moe.cpp, build_moe_ffn norm_w = false). The LLaDA loop (llama.cpp PR #16003 runs it
// with --diffusion-block-length 32 --diffusion-algorithm 4); unshifted logits (diffusion.shift_logits
// = false in its files).
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

void configure(const gguf::GgufFile& file, ModelConfig& c) {
  configure_qk_norm_experts(file, c);
  c.expert_weights_norm = false;
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(false);
}

}  // namespace

const Architecture kLladaMoeArch = {"llada-moe", configure, routed_layer, DefaultLoop::kLladaBlocks};

}  // namespace dllm::model
