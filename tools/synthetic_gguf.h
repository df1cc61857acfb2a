// Synthetic full-size LLaDA-8B / Dream-7B / LLaDA-MoE-7B-A1B / RND1 (30B-A3B) / LLaDA2.0-mini (16B-A1B) GGUF
// files with random but valid Q4_K / Q6_K weights in llama-quantize's Q4_K_M mix, for benchmarks and load
// tests (not for text quality: the weights are noise). Key and tensor names match llama.cpp's conversions
// (see the reference GGUFs in ../shared/reference and their README), so llama.cpp loads them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_types.h"

namespace dllm::synth {

/// Shape and tokenizer facts of one architecture. Sources: LLaDA-8B-Instruct and
/// Dream-v0-Instruct-7B config.json / tokenizer_config.json (../shared/notes/tokenizers-and-models.md);
/// LLaDA-MoE-7B-A1B, RND1 and LLaDA2.0-mini: see spec_for in synthetic_gguf.cpp.
struct Spec {
  std::string arch;           ///< general.architecture: llada, dream, llada-moe, rnd1, llada2, bailingmoe2
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
  // Ling 2.0 (llama.cpp's bailingmoe2 layout, which LLaDA2.x files use under `llada2`): fused attn_qkv
  // (rows Q|K|V), attn_q_norm / attn_k_norm, partial NEOX RoPE, a dense FFN on the leading layers, a
  // shared expert, and group-limited sigmoid routing with a selection bias (exp_probs_b.bias).
  bool ling2 = false;
  uint32_t n_rot = 0;                 ///< {arch}.rope.dimension_count (rotated dims of each head)
  uint32_t n_layer_dense_lead = 0;    ///< {arch}.leading_dense_block_count: layers with ffn_{gate,up,down}
  uint32_t n_expert_shared = 0;       ///< {arch}.expert_shared_count
  uint32_t n_ff_shexp = 0;            ///< {arch}.expert_shared_feed_forward_length (all shared experts)
  uint32_t n_expert_group = 0;        ///< {arch}.expert_group_count
  uint32_t n_expert_group_used = 0;   ///< {arch}.expert_group_used_count
  uint32_t expert_gating_func = 0;    ///< {arch}.expert_gating_func (2: sigmoid)
  bool expert_weights_norm = false;   ///< {arch}.expert_weights_norm
  float expert_weights_scale = 0.0f;  ///< {arch}.expert_weights_scale
  /// DiffusionGemma (llama.cpp PR #24423's layout, synthetic_gguf.cpp gemma_tensor_plan): sliding and
  /// global layers, dense MLP plus routed experts, self-conditioning, the gemma4 tokenizer.
  bool gemma = false;
};

/// The full-size spec of `arch` ("llada": LLaDA-8B, "dream": Dream-7B, "llada-moe": LLaDA-MoE-7B-A1B,
/// "rnd1": RND1-Base-0910, "llada2": LLaDA2.0-mini, "diffusion-gemma": DiffusionGemma 26B-A4B,
/// "bailingmoe2": the same model labelled for llama.cpp's
/// autoregressive bailingmoe2 path); n_layer overridden when layers > 0. `tiny` (llada2 and bailingmoe2
/// only) gives the shape of ../shared/reference/tiny-llada2-q4km.gguf instead, with the full size's Ling
/// tokenizer. Throws dllm::UsageError for another arch, or for tiny with another arch.
Spec spec_for(const std::string& arch, uint32_t layers = 0, bool tiny = false);

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
/// attn_output) apply only to models of exactly 8 experts, so no full-size MoE spec gets them.
/// Ling 2.0 (llada2 / bailingmoe2): llama-quantize counts attn_qkv as an attn_v-like tensor
/// (category_is_attn_v in llama-quant.cpp), and every tensor named ffn_down* by its layer, so attn_qkv,
/// ffn_down, ffn_down_exps and ffn_down_shexp are Q6_K in the use_more_bits layers; ffn_gate_inp and
/// exp_probs_b.bias are F32.
std::vector<TensorPlan> tensor_plan(const Spec& spec);

/// Writes the GGUF file to `path`, streaming tensor data (memory use stays ~ the tokenizer
/// metadata plus a few MB). Same seed, same bytes. Throws dllm::Error on I/O failure.
/// Q4_K blocks: random quants and 6-bit scales/mins, f16 d in [1e-4, 1.5e-4], dmin = 7.5 d (weights
/// centred, rms ~0.03, about a trained 8B model's size). Q6_K blocks: random quants, scales in
/// [-32, 31], f16 d in [6.2e-5, 1e-4] (rms ~0.028). Norm weights 1, biases (exp_probs_b.bias too)
/// uniform in [-0.02, 0.02], routers (ffn_gate_inp) uniform in [-0.05, 0.05]. A tensor's bytes depend
/// only on its name, type, shape and the seed, so a llada2 and a bailingmoe2 file of one seed hold
/// byte-identical tensors.
void write_synthetic_gguf(const Spec& spec, const std::string& path, uint64_t seed);

}  // namespace dllm::synth
