// LLaDA (general.architecture "llada"; GSAI-ML/LLaDA-8B-Instruct through llama.cpp's converter): Llama
// blocks without biases, ggml "normal" RoPE, a dense SwiGLU FFN, bidirectional attention (llama.cpp
// src/models/llada.cpp). The block-based loop of ML-GSAI/LLaDA generate.py; unshifted logits (the
// converter writes diffusion.shift_logits = false; a file without the key keeps them unshifted).
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

void configure(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope_mode = RopeMode::kNorm;  // llama_model_rope_type: LLM_ARCH_LLADA is LLAMA_ROPE_TYPE_NORM
  c.has_qkv_bias = file.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(false);
}

}  // namespace

const Architecture kLladaArch = {"llada", configure, dense_layer, DefaultLoop::kLladaBlocks};

}  // namespace dllm::model
