// Hyperparameters of a model, read once from the GGUF `{arch}.*` keys: the keys every architecture
// shares here (read_config), the rest by the architecture's own description (arch.h; one file per
// architecture: llada.cpp, dream.cpp, llada_moe.cpp, rnd1.cpp, llada2.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dllm::gguf {
class GgufFile;
}

namespace dllm::model {

struct Architecture;

/// RoPE pairing: kNorm rotates (2i, 2i+1) (ggml "normal", LLaDA); kNeox rotates (i, i + n_rot/2)
/// (ggml "NEOX": Dream, LLaDA-MoE, RND1), over the first n_rot dims of each head.
enum class RopeMode { kNorm, kNeox };

/// How a router's logits become expert scores (llama.cpp LLAMA_EXPERT_GATING_FUNC_TYPE, the key
/// {arch}.expert_gating_func: 1 softmax, 2 sigmoid).
enum class ExpertGating { kSoftmax, kSigmoid };

/// The denoising loop a model runs unless a request picks settings of another (diffusion::Schedule):
/// LLaDA's blocks (generate.py), Dream's timesteps (_sample), or block diffusion (LLaDA2.x's HF
/// generate(): blocks counted from position 0 under a block-causal mask, an exact K/V cache).
enum class DefaultLoop { kLladaBlocks, kDreamTimesteps, kBlockDiffusion };

struct ModelConfig {
  const Architecture* arch = nullptr;  ///< the description read_config chose by name (arch.h)
  std::string arch_name;               ///< general.architecture
  int64_t n_layer = 0;                 ///< {arch}.block_count
  int64_t n_embd = 0;                  ///< {arch}.embedding_length
  int64_t n_ff = 0;                    ///< {arch}.feed_forward_length (dense FFN; a MoE file may omit it: 0)
  int64_t n_head = 0;                  ///< {arch}.attention.head_count
  int64_t n_head_kv = 0;               ///< {arch}.attention.head_count_kv (defaults to n_head)
  /// {arch}.attention.key_length (= value_length), else n_embd / n_head, exact (llama.cpp's default).
  /// RND1 has n_head * head_dim != n_embd (Qwen3-30B-A3B: 32 x 128 = 4096 vs 2048).
  int64_t head_dim = 0;
  int64_t n_ctx_train = 0;         ///< {arch}.context_length
  int64_t n_vocab = 0;             ///< rows of output.weight (may exceed the tokenizer's vocabulary)
  float rope_freq_base = 10000.f;  ///< {arch}.rope.freq_base
  /// {arch}.rope.dimension_count: the dims of each head RoPE rotates, the first n_rot (partial RoPE
  /// when below head_dim, e.g. LLaDA2: 64 of 128); head_dim when the key is absent.
  int64_t n_rot = 0;
  float rms_eps = 1e-5f;  ///< {arch}.attention.layer_norm_rms_epsilon
  RopeMode rope_mode = RopeMode::kNorm;
  bool has_qkv_bias = false;  ///< Dream: blk.N.attn_{q,k,v}.bias
  /// LLaDA-MoE, RND1: blk.N.attn_q_norm / attn_k_norm, an RMSNorm over each head's head_dim values of Q
  /// and K (weights of head_dim, eps rms_eps) before RoPE (llama.cpp src/models/llada-moe.cpp, rnd1.cpp).
  bool has_qk_norm = false;
  /// LLaDA2: one blk.N.attn_qkv tensor whose rows are Q | K | V (llama.cpp bailingmoe2.cpp), bound as
  /// three row ranges (Model::load) instead of attn_q / attn_k / attn_v.
  bool fused_qkv = false;

  // Mixture of experts (0 / false for the dense architectures). A routed layer's FFN is llama.cpp's
  // build_moe_ffn (src/llama-graph.cpp): the router's n_expert logits turned into scores
  // (expert_gating), the n_expert_used best scores (plus the selection bias when there is one, within
  // the n_group_used best of n_expert_groups groups when grouped), SwiGLU per selected expert, the
  // weighted sum, plus the shared experts. LLaDA-MoE and RND1: softmax, no bias, no groups, no shared
  // expert, scale 1 (llada-moe.cpp, rnd1.cpp).
  int64_t n_expert = 0;       ///< {arch}.expert_count
  int64_t n_expert_used = 0;  ///< {arch}.expert_used_count (top-k)
  /// {arch}.expert_feed_forward_length; absent: n_ff / n_expert_used (llama.cpp llada-moe.cpp, rnd1.cpp).
  int64_t n_ff_exp = 0;
  /// {arch}.leading_dense_block_count: the first layers have a dense FFN (LLaDA2: 1); 0 for ours.
  int64_t n_layer_dense_lead = 0;
  ExpertGating expert_gating = ExpertGating::kSoftmax;  ///< {arch}.expert_gating_func
  /// blk.N.exp_probs_b.bias is added to the scores to choose the experts, not to weight them (LLaDA2).
  bool expert_selection_bias = false;
  int64_t n_expert_groups = 0;  ///< {arch}.expert_group_count; 0: no groups
  int64_t n_group_used = 0;     ///< {arch}.expert_group_used_count
  int64_t n_expert_shared =
      0;  ///< {arch}.expert_shared_count: ffn_{gate,up,down}_shexp on every routed layer
  /// {arch}.expert_shared_feed_forward_length: width of one shared expert (the shexp tensors hold
  /// n_expert_shared of them side by side); n_ff_exp when absent.
  int64_t n_ff_shexp = 0;
  /// Top-k weights divided by their sum (clamped to >= 2^-14): RND1 (build_moe_ffn norm_w = true in
  /// rnd1.cpp); LLaDA-MoE uses the softmax probabilities as they are (norm_w = false in llada-moe.cpp).
  bool expert_weights_norm = false;
  float expert_weights_scale = 1.0f;  ///< {arch}.expert_weights_scale (LLaDA2: 2.5)
  bool is_moe() const { return n_expert > 0; }
  /// Dream predicts token i from position i-1: logits for position i are row i-1 (row 0 for i = 0).
  /// diffusion.shift_logits; absent means true for dream and rnd1 (llama-diffusion-cli's default; their
  /// files have no key), false for llada and llada-moe (their converters write false).
  bool shift_logits = false;
  /// Block-diffusion models (DefaultLoop::kBlockDiffusion): the block length of their block-causal
  /// mask and loop (LLaDA2: 32, HF generate()'s default; the files carry no key for it); 0 otherwise.
  int64_t block_length = 0;

  // Gemma-4 (gemma4, diffusion-gemma; llama.cpp src/models/gemma4.cpp, PR #24423's diffusion-gemma.cpp).
  /// Per-layer K/V heads ({arch}.attention.head_count_kv as an array), empty when one count serves
  /// every layer (n_head_kv).
  std::vector<int64_t> n_head_kv_layer;
  /// Per layer: sliding-window attention ({arch}.attention.sliding_window_pattern); empty: none.
  std::vector<bool> swa_layer;
  int64_t n_swa = 0;             ///< {arch}.attention.sliding_window (keys a sliding layer's row sees)
  int64_t head_dim_swa = 0;      ///< {arch}.attention.key_length_swa (= value_length_swa)
  int64_t n_rot_swa = 0;         ///< {arch}.rope.dimension_count_swa
  float rope_freq_base_swa = 0;  ///< {arch}.rope.freq_base_swa
  /// The token embedding row times this (Gemma: sqrt(n_embd), in f32 as llama.cpp's graph).
  float embd_scale = 1.0f;
  /// logits = cap * tanh(logits / cap) ({arch}.final_logit_softcapping); 0: none.
  float final_logit_softcap = 0.0f;
  /// DiffusionGemma: the rows after the prompt (the canvas) enter the layers RMS-normed without a
  /// weight, after the self-conditioning input is added (PR #24423 diffusion-gemma.cpp 384-444).
  bool canvas_input_norm = false;
  /// DiffusionGemma: self_cond_{pre_norm (or self_cond_norm),gate,up,down} are in the file.
  bool self_conditioning = false;
  /// DiffusionGemma: diffusion.canvas_length (0 otherwise).
  int64_t canvas_length = 0;
  /// DiffusionGemma's entropy-bound sampler defaults: the file's diffusion.eb_* keys, else the PR's
  /// built-in values (examples/diffusion/diffusion.h diffusion_eb_params).
  struct EntropyBound {
    int64_t max_steps = 48;      ///< diffusion.eb_max_steps
    float t_min = 0.4f;          ///< diffusion.eb_t_min
    float t_max = 0.8f;          ///< diffusion.eb_t_max
    float entropy_bound = 0.1f;  ///< diffusion.eb_entropy_bound
    int64_t stability = 1;       ///< diffusion.eb_stability_threshold
    float confidence = 0.005f;   ///< diffusion.eb_confidence_threshold
  } eb;
};

/// Reads and checks the config: the keys every architecture shares, then the architecture's own
/// (Architecture::configure). Throws dllm::Error with exactly:
///   "unsupported model architecture: <arch> (supported: llada, dream, llada-moe, rnd1, llada2, gemma4,
///   diffusion-gemma)"
///   "required metadata key missing: <key>"
/// and a message naming n_embd and n_head when head_dim is not exact, or naming the expert keys when
/// expert_used_count is not in [1, expert_count].
ModelConfig read_config(const gguf::GgufFile& file);

/// A key an architecture requires: positive and at most 2^40. Throws dllm::Error "required metadata
/// key missing: <key>" or "metadata key <key> has an invalid value <v> (expected a positive count)".
int64_t positive_key(const gguf::GgufFile& file, const std::string& key);

/// The expert keys llama.cpp's MoE converters write ({arch}.expert_count, expert_used_count,
/// expert_feed_forward_length, falling back to n_ff / n_expert_used), checked. For the routed
/// architectures' descriptions.
void read_expert_keys(const gguf::GgufFile& file, ModelConfig& c);

}  // namespace dllm::model
