// Dream (general.architecture "dream"; Dream-org/Dream-v0-Instruct-7B, a Qwen2.5 backbone): q/k/v
// biases, NEOX RoPE, a dense SwiGLU FFN, bidirectional attention (llama.cpp src/models/dream.cpp). The
// timestep loop of Dream's generation_utils.py _sample; the logits are shifted (position i predicted
// by row i-1: llama-diffusion-cli's default when the file has no diffusion.shift_logits, as Dream's
// files do not).
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

void configure(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope_mode = RopeMode::kNeox;
  c.has_qkv_bias = true;  // LLM_ARCH_DREAM: attn_{q,k,v}.bias
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(true);
}

}  // namespace

const Architecture kDreamArch = {"dream", configure, dense_layer, DefaultLoop::kDreamTimesteps};

}  // namespace dllm::model
