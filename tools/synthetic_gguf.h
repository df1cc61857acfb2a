// Synthetic full-size LLaDA-8B / Dream-7B / LLaDA-MoE-7B-A1B / RND1 (30B-A3B) GGUF files with random but
// valid Q4_K / Q6_K weights in llama-quantize's Q4_K_M mix, for benchmarks and load tests (not for text
// quality: the weights are noise). Key and tensor names match llama.cpp's conversions (see the
// reference GGUFs in ../shared/reference and their README), so llama.cpp loads them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_types.h"

namespace dllm::synth {

/// Shape and tokenizer facts of one architecture. Sources: LLaDA-8B-Instruct and
/// Dream-v0-Instruct-7B config.json / tokenizer_config.json (../shared/notes/tokenizers-and-models.md);
/// LLaDA-MoE-7B-A1B and RND1: see spec_for in synthetic_gguf.cpp.
struct Spec {
  std::string arch;           ///< "llada", "dream", "llada-moe" or "rnd1" (general.architecture)
  std::string name;           ///< general.name
  uint32_t n_layer;           ///< {arch}.block_count
  uint32_t n_embd;            ///< {arch}.embedding_length
  uint32_t n_head;            ///< {arch}.attention.head_count
  uint32_t n_head_kv;         ///< {arch}.attention.head_count_kv
  uint32_t n_ff;              ///< {arch}.feed_forward_length
  uint32_t n_vocab;           ///< rows of token_embd / output
  uint32_t n_ctx;             ///< {arch}.context_length
  float rope_freq_base;       ///< {arch}.rope.freq_base
  float rms_eps;              ///< {arch}.attention.layer_norm_rms_epsilon
  bool qkv_bias;              ///< Dream: attn_{q,k,v}.bias (F32)
  std::string tokenizer_pre;  ///< tokenizer.ggml.pre
  // Mixture of experts (0 for the dense models).
  uint32_t n_expert = 0;       ///< {arch}.expert_count
  uint32_t n_expert_used = 0;  ///< {arch}.expert_used_count
  uint32_t n_ff_exp = 0;       ///< {arch}.expert_feed_forward_length
  uint32_t head_dim = 0;       ///< {arch}.attention.key_length / value_length; 0: n_embd / n_head, no key
  bool tied_output = false;    ///< no output.weight (the LM head reuses token_embd)
};

/// The full-size spec of `arch` ("llada": LLaDA-8B, "dream": Dream-7B, "llada-moe": LLaDA-MoE-7B-A1B,
/// "rnd1": RND1-Base-0910); n_layer overridden when layers > 0. Throws dllm::UsageError for another
/// arch.
Spec spec_for(const std::string& arch, uint32_t layers = 0);

/// One tensor of the file: GGUF name, ggml type, ne in ggml order (ne[0] = row length).
struct TensorPlan {
  std::string name;
  gguf::GgmlType type;
  std::vector<int64_t> ne;
};

/// Tensors in llama-quantize's output order (output, output_norm, token_embd, then each layer's
/// tensors sorted by name) with the Q4_K_M type mix of llama.cpp src/llama-quant.cpp:
/// output.weight Q6_K; attn_v.weight and ffn_down.weight (MoE: ffn_down_exps.weight) Q6_K in layers i
/// with i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (integer division), Q4_K elsewhere; every other
/// matrix Q4_K (token_embd too, or Q6_K when tied to the output); norms, biases and the MoE router
/// ffn_gate_inp F32 (never quantized). The MoE rules of llama-quant.cpp (Q8_0 attn_k / attn_v, Q5_K
/// attn_output) apply only to models of exactly 8 experts, so neither full-size MoE spec gets them.
std::vector<TensorPlan> tensor_plan(const Spec& spec);

/// Writes the GGUF file to `path`, streaming tensor data (memory use stays ~ the tokenizer
/// metadata plus a few MB). Same seed, same bytes. Throws dllm::Error on I/O failure.
/// Q4_K blocks: random quants and 6-bit scales/mins, f16 d in [1e-4, 1.5e-4], dmin = 7.5 d (weights
/// centred, rms ~0.03, about a trained 8B model's size). Q6_K blocks: random quants, scales in
/// [-32, 31], f16 d in [6.2e-5, 1e-4] (rms ~0.028). Norm weights 1, biases uniform in [-0.02, 0.02].
void write_synthetic_gguf(const Spec& spec, const std::string& path, uint64_t seed);

}  // namespace dllm::synth
