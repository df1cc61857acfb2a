// The layer sequence of a model as data: what each transformer block computes, decided once from the
// config by the architecture's description (arch.h). Model::load binds the tensors a description
// names (tensors.h); model::ForwardDriver runs it block by block over a device's operations, and no
// device looks at the architecture name. A description names blocks; a device implements them, and
// refuses (engine::unsupported) those it does not have.
//
// Every layer is pre-norm, Llama-style (llama.cpp src/models/llada.cpp, dream.cpp, llada-moe.cpp,
// rnd1.cpp):
//   h = RMSNorm(x) * attn_norm
//   q, k, v = h Wq (+ bq), h Wk (+ bk), h Wv (+ bv)        biases when qkv_bias
//   q, k = RMSNorm_head(q) * q_norm, RMSNorm_head(k) * k_norm   per head of head_dim, when qk_norm
//   q, k = RoPE(q), RoPE(k)                                 the first n_rot dims, pairs as rope_mode
//   x += (softmax(q k^T / sqrt(head_dim)) v) Wo             per head, GQA, each row over the keys its
//                                                           segment's mask rule and the layer's
//                                                           window give it (forward/mask.h)
//   h = RMSNorm(x) * ffn_norm
//   x += FFN(h)                                             as ffn
// and after the last layer: logits = (RMSNorm(x) * output_norm) Woutput.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace dllm::model {

/// The feed-forward block of a layer.
enum class FfnKind {
  kDense,  ///< SwiGLU: (silu(h Wgate) * (h Wup)) Wdown (llama.cpp build_ffn, LLM_FFN_SILU, LLM_FFN_PAR)
  /// Routed experts as the config's routing fields say (ModelConfig: gating, selection bias, groups,
  /// shared experts, normalisation, scale), each a SwiGLU of n_ff_exp, weighted sum (llama.cpp
  /// build_moe_ffn, src/llama-graph.cpp; cpu/moe.h).
  kMoe,
  /// Gemma-4's MoE layer (llama.cpp src/models/gemma4-common.h 71-126): a dense GEGLU MLP of n_ff
  /// (the shared expert) on RMSNorm(a) * ffn_norm, RMS-normed * post_ffw_norm_1; routed GEGLU experts
  /// (fused ffn_gate_up_exps, rows [gate | up]) on RMSNorm(a) * pre_ffw_norm_2, routed by softmax of
  /// W_r (RMSNorm(a) / sqrt(n_embd) * ffn_gate_inp.scale), top-k weights renormalised, each expert's
  /// output times ffn_down_exps.scale[e], the sum RMS-normed * post_ffw_norm_2; the block's output is
  /// RMSNorm(dense + moe) * post_ffw_norm. a: the residual stream after attention.
  kGegluDenseMoe,
};

/// One transformer block (blk.N.*).
struct LayerDesc {
  bool qkv_bias = false;  ///< q, k, v add blk.N.attn_{q,k,v}.bias (Dream)
  bool qk_norm = false;   ///< per-head RMSNorm of q and k, blk.N.attn_{q,k}_norm (LLaDA-MoE, RND1)
  RopeMode rope_mode = RopeMode::kNorm;  ///< RoPE pairing of q and k
  int64_t n_rot = 0;                     ///< dims of each head RoPE rotates (the first n_rot)
  float rope_freq_base = 10000.f;        ///< RoPE base of this layer (DiffusionGemma: global vs sliding)
  int64_t n_head_kv = 0;                 ///< K/V heads of this layer
  /// Sliding-window attention: each row keeps the window - 1 keys before its mask group
  /// (forward/mask.h); 0: no window (every layer of ours).
  int64_t window = 0;
  FfnKind ffn = FfnKind::kDense;
  int64_t head_dim = 0;  ///< of q, k and v heads in this layer (Gemma-4: global 512 / sliding 256)
  /// Gemma-4: the attention output is RMS-normed * post_attention_norm before its residual add; V is
  /// RMS-normed per head without a weight; the file may omit attn_v (then V is the K projection
  /// before its norm and RoPE); the layer's output (residual included) is multiplied by
  /// layer_output_scale (by enc_layer_output_scale on DiffusionGemma's prompt rows).
  bool gemma = false;
  /// Scores are q.k times this; 0: 1/sqrt(head_dim). Gemma-4: 1 (the Q/K norms scale).
  float attn_scale = 0.0f;
  /// rope_freqs.weight divides this layer's RoPE frequencies (Gemma-4's global layers).
  bool rope_freq_factors = false;
};

/// A layer of the config's shared features (its biases, Q/K norm, RoPE, KV heads) with a dense FFN:
/// every layer of LLaDA and Dream.
LayerDesc dense_layer(const ModelConfig& c, int64_t il);
/// The same with routed experts, except the first n_layer_dense_lead layers (dense): LLaDA-MoE, RND1.
LayerDesc routed_layer(const ModelConfig& c, int64_t il);

/// The n_layer blocks of a model with config `c`, in order (c.arch->layer).
std::vector<LayerDesc> describe_layers(const ModelConfig& c);

/// Block `il` (0 <= il < c.n_layer) of describe_layers(c), without making the others: Model::load
/// binds blocks one by one, before it knows the file really has c.n_layer of them.
LayerDesc describe_layer(const ModelConfig& c, int64_t il);

}  // namespace dllm::model
