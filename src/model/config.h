// Hyperparameters of a LLaDA or Dream model, read once from the GGUF `{arch}.*` keys.
#pragma once

#include <cstdint>
#include <string>

namespace dllm::gguf {
class GgufFile;
}

namespace dllm::model {

enum class Arch { kLlada, kDream };

/// RoPE pairing: kNorm rotates (2i, 2i+1) (ggml "normal", LLaDA); kNeox rotates (i, i + head_dim/2)
/// (ggml "NEOX", Dream).
enum class RopeMode { kNorm, kNeox };

struct ModelConfig {
  Arch arch = Arch::kLlada;
  std::string arch_name;           ///< general.architecture
  int64_t n_layer = 0;             ///< {arch}.block_count
  int64_t n_embd = 0;              ///< {arch}.embedding_length
  int64_t n_ff = 0;                ///< {arch}.feed_forward_length
  int64_t n_head = 0;              ///< {arch}.attention.head_count
  int64_t n_head_kv = 0;           ///< {arch}.attention.head_count_kv (defaults to n_head)
  int64_t head_dim = 0;            ///< n_embd / n_head, exact
  int64_t n_ctx_train = 0;         ///< {arch}.context_length
  int64_t n_vocab = 0;             ///< rows of output.weight (may exceed the tokenizer's vocabulary)
  float rope_freq_base = 10000.f;  ///< {arch}.rope.freq_base
  float rms_eps = 1e-5f;           ///< {arch}.attention.layer_norm_rms_epsilon
  RopeMode rope_mode = RopeMode::kNorm;
  bool has_qkv_bias = false;  ///< Dream: blk.N.attn_{q,k,v}.bias
  /// Dream predicts token i from position i-1: logits for position i are row i-1 (row 0 for i = 0).
  /// diffusion.shift_logits; absent means true for dream, LLaDA files say false.
  bool shift_logits = false;
};

/// Reads and checks the config. Throws dllm::Error with exactly:
///   "unsupported model architecture: <arch> (supported: llada, dream)"
///   "required metadata key missing: <key>"
/// and a message naming n_embd and n_head when head_dim is not exact.
ModelConfig read_config(const gguf::GgufFile& file);

}  // namespace dllm::model
