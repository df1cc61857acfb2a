// The layer sequence of a model as data: what each transformer block computes, decided once from the
// config. Model::load binds the tensors a description names; the CPU and GPU forward passes run it
// block by block and never look at the architecture name. Adding an architecture means describing
// its layers here (layer_desc.cpp) and binding their tensors (model.cpp); a backend changes only
// when a description asks for an operation it does not have yet.
//
// Every layer is pre-norm, Llama-style, bidirectional (llama.cpp src/models/llada.cpp, dream.cpp,
// llada-moe.cpp, rnd1.cpp):
//   h = RMSNorm(x) * attn_norm
//   q, k, v = h Wq (+ bq), h Wk (+ bk), h Wv (+ bv)        biases when qkv_bias
//   q, k = RMSNorm_head(q) * q_norm, RMSNorm_head(k) * k_norm   per head of head_dim, when qk_norm
//   q, k = RoPE(q), RoPE(k)                                 pairs as rope_mode
//   x += (softmax(q k^T / sqrt(head_dim)) v) Wo             per head, GQA, no mask
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
  /// Routed experts: softmax over h Wrouter, the n_expert_used most probable experts (weights
  /// renormalised to sum 1 when expert_weights_norm), each a SwiGLU of n_ff_exp, weighted sum
  /// (llama.cpp build_moe_ffn, src/llama-graph.cpp; cpu/moe.h).
  kMoe,
};

/// One transformer block (blk.N.*).
struct LayerDesc {
  bool qkv_bias = false;  ///< q, k, v add blk.N.attn_{q,k,v}.bias (Dream)
  bool qk_norm = false;   ///< per-head RMSNorm of q and k, blk.N.attn_{q,k}_norm (LLaDA-MoE, RND1)
  RopeMode rope_mode = RopeMode::kNorm;  ///< RoPE pairing of q and k
  /// Sliding-window attention: each row keeps the window - 1 keys before its mask group
  /// (forward/mask.h); 0: no window.
  int64_t window = 0;
  FfnKind ffn = FfnKind::kDense;
};

/// The n_layer blocks of a model with config `c`, in order: LLaDA no biases, kNorm RoPE, dense FFN;
/// Dream q/k/v biases, kNeox RoPE, dense FFN; LLaDA-MoE and RND1 Q/K norms, kNeox RoPE, routed experts
/// (c.has_qkv_bias, c.has_qk_norm, c.rope_mode, c.is_moe()).
std::vector<LayerDesc> describe_layers(const ModelConfig& c);

/// Block `il` (0 <= il < c.n_layer) of describe_layers(c), without making the others: Model::load
/// binds blocks one by one, before it knows the file really has c.n_layer of them.
LayerDesc describe_layer(const ModelConfig& c, int64_t il);

}  // namespace dllm::model
