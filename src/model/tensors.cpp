// layer_tensors (tensors.h): names and shapes as llama.cpp's loaders bind them (src/models/llada.cpp,
// dream.cpp, llada-moe.cpp, rnd1.cpp load_arch_tensors; bailingmoe2.cpp for the shared experts and the
// selection bias).
#include "model/tensors.h"

#include "model/model.h"

namespace dllm::model {

namespace {

/// A Gemma-4 layer (llama.cpp src/models/gemma4.cpp; PR #24423 src/models/diffusion-gemma.cpp
/// load_arch_tensors 243-325): attention with Q/K norms, attn_v optional (absent: K is V), the
/// pre/post norms, the dense MLP plus routed experts (FfnKind::kGegluDenseMoe), the output scalars.
std::vector<TensorSpec> gemma_layer_tensors(const ModelConfig& c, const LayerDesc& d) {
  const int64_t hd = d.head_dim, n_q = c.n_head * hd, n_kv = d.n_head_kv * hd, E = c.n_expert, d_ = c.n_embd;
  using W = LayerWeights;
  std::vector<TensorSpec> t = {
      {"attn_norm.weight", {d_}, nullptr, &W::attn_norm},
      {"attn_q.weight", {d_, n_q}, &W::attn_q},
      {"attn_k.weight", {d_, n_kv}, &W::attn_k},
      {"attn_v.weight", {d_, n_kv}, &W::attn_v, nullptr, true},
      {"attn_q_norm.weight", {hd}, nullptr, &W::attn_q_norm},
      {"attn_k_norm.weight", {hd}, nullptr, &W::attn_k_norm},
      {"attn_output.weight", {n_q, d_}, &W::attn_output},
      {"post_attention_norm.weight", {d_}, nullptr, &W::post_attention_norm},
      {"ffn_norm.weight", {d_}, nullptr, &W::ffn_norm},
      {"ffn_gate.weight", {d_, c.n_ff}, &W::ffn_gate},
      {"ffn_up.weight", {d_, c.n_ff}, &W::ffn_up},
      {"ffn_down.weight", {c.n_ff, d_}, &W::ffn_down},
      {"post_ffw_norm_1.weight", {d_}, nullptr, &W::post_ffw_norm_1},
      {"ffn_gate_inp.weight", {d_, E}, nullptr, &W::ffn_gate_inp},
      {"ffn_gate_inp.scale", {d_}, nullptr, &W::ffn_gate_inp_scale},
      {"pre_ffw_norm_2.weight", {d_}, nullptr, &W::pre_ffw_norm_2},
      {"ffn_gate_up_exps.weight", {d_, 2 * c.n_ff_exp, E}, &W::ffn_gate_up_exps},
      {"ffn_down_exps.weight", {c.n_ff_exp, d_, E}, &W::ffn_down_exps},
      {"ffn_down_exps.scale", {E}, nullptr, &W::ffn_down_exps_scale},
      {"post_ffw_norm_2.weight", {d_}, nullptr, &W::post_ffw_norm_2},
      {"post_ffw_norm.weight", {d_}, nullptr, &W::post_ffw_norm},
      {"layer_output_scale.weight", {1}, nullptr, &W::layer_output_scale},
  };
  // DiffusionGemma's prompt rows (both scalars are required there: diffusion-gemma.cpp 293-294).
  if (c.canvas_input_norm)
    t.push_back({"enc_layer_output_scale.weight", {1}, nullptr, &W::enc_layer_output_scale});
  return t;
}

}  // namespace

std::vector<TensorSpec> layer_tensors(const ModelConfig& c, const LayerDesc& d) {
  if (d.gemma) return gemma_layer_tensors(c, d);
  const int64_t hd = c.head_dim, n_q = c.n_head * hd, n_kv = d.n_head_kv * hd, E = c.n_expert;
  using W = LayerWeights;
  std::vector<TensorSpec> t = {
      {"attn_norm.weight", {c.n_embd}, nullptr, &W::attn_norm},
  };
  if (c.fused_qkv) {
    // Rows Q | K | V in one tensor (bailingmoe2.cpp); Model::load binds the three row ranges.
    t.push_back({"attn_qkv.weight", {c.n_embd, n_q + 2 * n_kv}, &W::attn_qkv});
  } else {
    t.push_back({"attn_q.weight", {c.n_embd, n_q}, &W::attn_q});
    t.push_back({"attn_k.weight", {c.n_embd, n_kv}, &W::attn_k});
    t.push_back({"attn_v.weight", {c.n_embd, n_kv}, &W::attn_v});
  }
  if (d.qkv_bias) {
    t.push_back({"attn_q.bias", {n_q}, nullptr, &W::attn_q_bias});
    t.push_back({"attn_k.bias", {n_kv}, nullptr, &W::attn_k_bias});
    t.push_back({"attn_v.bias", {n_kv}, nullptr, &W::attn_v_bias});
  }
  if (d.qk_norm) {
    t.push_back({"attn_q_norm.weight", {hd}, nullptr, &W::attn_q_norm});
    t.push_back({"attn_k_norm.weight", {hd}, nullptr, &W::attn_k_norm});
  }
  t.push_back({"attn_output.weight", {n_q, c.n_embd}, &W::attn_output});
  t.push_back({"ffn_norm.weight", {c.n_embd}, nullptr, &W::ffn_norm});
  switch (d.ffn) {
    case FfnKind::kDense:
      t.push_back({"ffn_gate.weight", {c.n_embd, c.n_ff}, &W::ffn_gate});
      t.push_back({"ffn_up.weight", {c.n_embd, c.n_ff}, &W::ffn_up});
      t.push_back({"ffn_down.weight", {c.n_ff, c.n_embd}, &W::ffn_down});
      break;
    case FfnKind::kMoe:
      // Router [n_embd, E]: E rows of n_embd, decoded to f32 (F32 in every llama-quantize mix).
      t.push_back({"ffn_gate_inp.weight", {c.n_embd, E}, nullptr, &W::ffn_gate_inp});
      if (c.expert_selection_bias) t.push_back({"exp_probs_b.bias", {E}, nullptr, &W::exp_probs_b});
      t.push_back({"ffn_gate_exps.weight", {c.n_embd, c.n_ff_exp, E}, &W::ffn_gate_exps});
      t.push_back({"ffn_up_exps.weight", {c.n_embd, c.n_ff_exp, E}, &W::ffn_up_exps});
      t.push_back({"ffn_down_exps.weight", {c.n_ff_exp, c.n_embd, E}, &W::ffn_down_exps});
      if (c.n_expert_shared > 0) {
        const int64_t sh = c.n_ff_shexp * c.n_expert_shared;
        t.push_back({"ffn_gate_shexp.weight", {c.n_embd, sh}, &W::ffn_gate_shexp});
        t.push_back({"ffn_up_shexp.weight", {c.n_embd, sh}, &W::ffn_up_shexp});
        t.push_back({"ffn_down_shexp.weight", {sh, c.n_embd}, &W::ffn_down_shexp});
      }
      break;
    case FfnKind::kGegluDenseMoe:  // gemma_layer_tensors
      break;
  }
  return t;
}

}  // namespace dllm::model
