// RND1 (general.architecture "rnd1"; radicalnumerics RND1-Base, Qwen3-30B-A3B converted to diffusion):
// per-head RMSNorm of Q and K before NEOX RoPE, n_head x head_dim != n_embd (attention.key_length),
// every layer's FFN 128 routed experts with 8 used: softmax gating, the top-k weights normalised to
// sum 1 (llama.cpp src/models/rnd1.cpp, build_moe_ffn norm_w = true). RND1's own sampler
// (rnd/sampling.py) shifts the logits and commits the lowest-entropy positions on a timestep
// schedule: Dream's loop with its entropy algorithm (llama.cpp examples/diffusion/README.md runs RND1
// with --diffusion-algorithm 1); its files have no diffusion.shift_logits, so the logits are shifted.
// A base model: its harness feeds plain text (demo_rnd_generation.py), so the prompt is raw text.
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

void configure(const gguf::GgufFile& file, ModelConfig& c) {
  configure_qk_norm_experts(file, c);
  c.expert_weights_norm = true;
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(true);
}

}  // namespace

const Architecture kRnd1Arch = {
    "rnd1", configure, routed_layer, DefaultLoop::kDreamTimesteps,
    "rnd1 is a base model (RND1-Base, not tuned for chat): the prompt is fed as raw text, as with --no-chat"};

}  // namespace dllm::model
