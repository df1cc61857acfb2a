// Synthetic full-size LLaDA-8B / Dream-7B GGUF files with random but valid Q4_K / Q6_K weights in
// llama-quantize's Q4_K_M mix, for benchmarks and load tests (not for text quality: the weights
// are noise). Key and tensor names match llama.cpp's conversions (see the reference GGUFs in
// ../shared/reference and their README), so llama.cpp loads them too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_types.h"

namespace dllm::synth {

/// Shape and tokenizer facts of one architecture. Sources: LLaDA-8B-Instruct and
/// Dream-v0-Instruct-7B config.json / tokenizer_config.json (../shared/notes/tokenizers-and-models.md).
struct Spec {
  std::string arch;           ///< "llada" or "dream" (general.architecture)
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
};

/// The full-size spec of `arch` ("llada": LLaDA-8B, "dream": Dream-7B); n_layer overridden when
/// layers > 0. Throws dllm::UsageError for another arch.
Spec spec_for(const std::string& arch, uint32_t layers = 0);

/// One tensor of the file: GGUF name, ggml type, ne in ggml order (ne[0] = row length).
struct TensorPlan {
  std::string name;
  gguf::GgmlType type;
  std::vector<int64_t> ne;
};

/// Tensors in llama-quantize's output order (output, output_norm, token_embd, then each layer's
/// tensors sorted by name) with the Q4_K_M type mix of llama.cpp src/llama-quant.cpp:
/// output.weight Q6_K; attn_v.weight and ffn_down.weight Q6_K in layers i with
/// i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (integer division), Q4_K elsewhere; every other
/// matrix Q4_K (token_embd too); norms and biases F32.
std::vector<TensorPlan> tensor_plan(const Spec& spec);

/// Writes the GGUF file to `path`, streaming tensor data (memory use stays ~ the tokenizer
/// metadata plus a few MB). Same seed, same bytes. Throws dllm::Error on I/O failure.
/// Q4_K blocks: random quants and 6-bit scales/mins, f16 d in [1e-4, 1.5e-4], dmin = 7.5 d (weights
/// centred, rms ~0.03, about a trained 8B model's size). Q6_K blocks: random quants, scales in
/// [-32, 31], f16 d in [6.2e-5, 1e-4] (rms ~0.028). Norm weights 1, biases uniform in [-0.02, 0.02].
void write_synthetic_gguf(const Spec& spec, const std::string& path, uint64_t seed);

}  // namespace dllm::synth
