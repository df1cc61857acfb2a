// Hyperparameters of a LLaDA, Dream, LLaDA-MoE or RND1 model, read once from the GGUF `{arch}.*` keys.
#pragma once

#include <cstdint>
#include <string>

namespace dllm::gguf {
class GgufFile;
}

namespace dllm::model {

/// general.architecture: "llada", "dream", and the mixture-of-experts "llada-moe" (LLaDA-MoE-7B-A1B) and
/// "rnd1" (RND1-Base, Qwen3-MoE converted to diffusion).
enum class Arch { kLlada, kDream, kLladaMoe, kRnd1 };

/// "llada", "dream", "llada-moe", "rnd1".
const char* arch_name(Arch a);

/// RoPE pairing: kNorm rotates (2i, 2i+1) (ggml "normal", LLaDA); kNeox rotates (i, i + head_dim/2)
/// (ggml "NEOX": Dream, LLaDA-MoE, RND1).
enum class RopeMode { kNorm, kNeox };

struct ModelConfig {
  Arch arch = Arch::kLlada;
  std::string arch_name;  ///< general.architecture
  int64_t n_layer = 0;    ///< {arch}.block_count
  int64_t n_embd = 0;     ///< {arch}.embedding_length
  int64_t n_ff = 0;       ///< {arch}.feed_forward_length (dense FFN; a MoE file may omit it: 0)
  int64_t n_head = 0;     ///< {arch}.attention.head_count
  int64_t n_head_kv = 0;  ///< {arch}.attention.head_count_kv (defaults to n_head)
  /// {arch}.attention.key_length (= value_length), else n_embd / n_head, exact (llama.cpp's default).
  /// RND1 has n_head * head_dim != n_embd (Qwen3-30B-A3B: 32 x 128 = 4096 vs 2048).
  int64_t head_dim = 0;
  int64_t n_ctx_train = 0;         ///< {arch}.context_length
  int64_t n_vocab = 0;             ///< rows of output.weight (may exceed the tokenizer's vocabulary)
  float rope_freq_base = 10000.f;  ///< {arch}.rope.freq_base
  float rms_eps = 1e-5f;           ///< {arch}.attention.layer_norm_rms_epsilon
  RopeMode rope_mode = RopeMode::kNorm;
  bool has_qkv_bias = false;  ///< Dream: blk.N.attn_{q,k,v}.bias
  /// LLaDA-MoE, RND1: blk.N.attn_q_norm / attn_k_norm, an RMSNorm over each head's head_dim values of Q
  /// and K (weights of head_dim, eps rms_eps) before RoPE (llama.cpp src/models/llada-moe.cpp, rnd1.cpp).
  bool has_qk_norm = false;

  // Mixture of experts (llada-moe, rnd1; all 0 / false for the dense architectures). Every layer's FFN
  // is the routed block of llama.cpp build_moe_ffn (src/llama-graph.cpp): softmax over n_expert router
  // logits, the n_expert_used largest probabilities, SwiGLU per selected expert, weighted sum.
  int64_t n_expert = 0;       ///< {arch}.expert_count
  int64_t n_expert_used = 0;  ///< {arch}.expert_used_count (top-k)
  /// {arch}.expert_feed_forward_length; absent: n_ff / n_expert_used (llama.cpp llada-moe.cpp, rnd1.cpp).
  int64_t n_ff_exp = 0;
  /// Top-k weights divided by their sum (clamped to >= 2^-14): RND1 (build_moe_ffn norm_w = true in
  /// rnd1.cpp); LLaDA-MoE uses the softmax probabilities as they are (norm_w = false in llada-moe.cpp).
  /// Neither reads {arch}.expert_weights_norm or expert_weights_scale (hparams stay false / 0).
  bool expert_weights_norm = false;
  bool is_moe() const { return n_expert > 0; }
  /// Dream predicts token i from position i-1: logits for position i are row i-1 (row 0 for i = 0).
  /// diffusion.shift_logits; absent means true for dream and rnd1 (llama-diffusion-cli's default; their
  /// files have no key), false for llada and llada-moe (their converters write false).
  bool shift_logits = false;
};

/// Reads and checks the config. Throws dllm::Error with exactly:
///   "unsupported model architecture: <arch> (supported: llada, dream, llada-moe, rnd1)"
///   "required metadata key missing: <key>"
/// and a message naming n_embd and n_head when head_dim is not exact, or naming the expert keys when
/// expert_used_count is not in [1, expert_count].
ModelConfig read_config(const gguf::GgufFile& file);

}  // namespace dllm::model
