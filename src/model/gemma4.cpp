// Gemma-4's MoE variant as llama.cpp runs it: `gemma4` (merged, src/models/gemma4.cpp, a causal
// language model: dllm computes its logits, as a check of the backbone) and `diffusion-gemma` (Google's
// DiffusionGemma 26B-A4B, llama.cpp PR #24423 src/models/diffusion-gemma.cpp at unslothai/llama.cpp
// 73d820aff, whose converter makes Unsloth's GGUFs). Both have:
//   - sliding and global layers (attention.sliding_window_pattern): per-layer K/V heads (an array
//     attention.head_count_kv), head size key_length (global) or key_length_swa (sliding), RoPE NEOX
//     over rope.dimension_count(_swa) dims with base rope.freq_base (global, divided by rope_freqs)
//     or rope.freq_base_swa (sliding), sliding layers seeing the last attention.sliding_window keys;
//   - pre/post norms around attention and both FFN halves, Q/K norms, V RMS-normed without a weight,
//     attention scale 1, K reused as V where attn_v is absent (LayerDesc::gemma);
//   - a dense GEGLU MLP as shared expert plus routed experts (FfnKind::kGegluDenseMoe);
//   - token_embd * sqrt(n_embd) in, a tied LM head, the final logit softcap.
// diffusion-gemma adds: attention.causal = false with its prompt causal and the canvas bidirectional
// (forward::MaskRule::causal_prompt), the canvas rows RMS-normed without weight on entry,
// enc_layer_output_scale on the prompt rows, self-conditioning (self_cond_*), diffusion.canvas_length
// and the entropy-bound sampler's diffusion.eb_* keys.
#include <cmath>
#include <string>

#include "base/error.h"
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

/// `{arch}.key` as an array of one value per layer (bools or integers), checked for length.
std::vector<int64_t> per_layer(const gguf::GgufFile& file, const std::string& key, int64_t n_layer) {
  const gguf::Value* v = file.find(key);
  if (v == nullptr) throw Error("required metadata key missing: " + key);
  if (v->type != gguf::ValueType::ARRAY || static_cast<int64_t>(v->items.size()) != n_layer) {
    throw Error("metadata key " + key + " must be an array of " + std::to_string(n_layer) +
                " values (one per layer, block_count)");
  }
  std::vector<int64_t> out;
  for (const gguf::Value& e : v->items) {
    switch (e.type) {
      case gguf::ValueType::BOOL:
      case gguf::ValueType::UINT8:
      case gguf::ValueType::UINT16:
      case gguf::ValueType::UINT32:
      case gguf::ValueType::UINT64:
        out.push_back(static_cast<int64_t>(e.u));
        break;
      case gguf::ValueType::INT8:
      case gguf::ValueType::INT16:
      case gguf::ValueType::INT32:
      case gguf::ValueType::INT64:
        out.push_back(e.i);
        break;
      default:
        throw Error("metadata key " + key + " holds " + gguf::value_type_name(e.type) +
                    " values, expected integers or booleans");
    }
  }
  return out;
}

/// The keys both share (llama.cpp gemma4.cpp / diffusion-gemma.cpp load_arch_hparams).
void configure_gemma4(const gguf::GgufFile& file, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.rope_mode = RopeMode::kNeox;
  c.has_qk_norm = true;
  read_expert_keys(file, c);
  c.n_ff = positive_key(file, a + "feed_forward_length");  // the dense MLP (shared expert)
  for (const int64_t s : per_layer(file, a + "attention.sliding_window_pattern", c.n_layer))
    c.swa_layer.push_back(s != 0);
  if (const gguf::Value* kv = file.find(a + "attention.head_count_kv");
      kv != nullptr && kv->type == gguf::ValueType::ARRAY) {
    c.n_head_kv_layer = per_layer(file, a + "attention.head_count_kv", c.n_layer);
    for (const int64_t n : c.n_head_kv_layer) {
      if (n <= 0 || c.n_head % n != 0) {
        throw Error("metadata key " + a + "attention.head_count_kv has " + std::to_string(n) +
                    ": each layer's K/V heads must divide attention.head_count (" + std::to_string(c.n_head) +
                    ")");
      }
    }
  }
  c.n_swa = positive_key(file, a + "attention.sliding_window");
  c.head_dim_swa = positive_key(file, a + "attention.key_length_swa");
  if (file.find(a + "attention.value_length_swa") &&
      positive_key(file, a + "attention.value_length_swa") != c.head_dim_swa) {
    throw Error(a + "attention.value_length_swa differs from " + a +
                "attention.key_length_swa: not supported (llama.cpp requires them equal)");
  }
  c.n_rot_swa = file.find(a + "rope.dimension_count_swa") ? positive_key(file, a + "rope.dimension_count_swa")
                                                          : c.head_dim_swa;
  if (c.n_rot_swa > c.head_dim_swa || c.n_rot_swa % 2 != 0 || c.head_dim_swa % 2 != 0) {
    throw Error(a + "rope.dimension_count_swa (" + std::to_string(c.n_rot_swa) +
                ") must be even and at most attention.key_length_swa (" + std::to_string(c.head_dim_swa) +
                ")");
  }
  c.rope_freq_base_swa = file.find_f32(a + "rope.freq_base_swa").value_or(c.rope_freq_base);
  if (!(c.rope_freq_base_swa > 0.0f)) throw Error("invalid " + a + "rope.freq_base_swa");
  c.final_logit_softcap = file.find_f32(a + "final_logit_softcapping").value_or(0.0f);
  if (!(c.final_logit_softcap >= 0.0f)) throw Error("invalid " + a + "final_logit_softcapping");
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.shift_logits = false;
}

void configure_diffusion_gemma(const gguf::GgufFile& file, ModelConfig& c) {
  configure_gemma4(file, c);
  c.canvas_input_norm = true;
  // The PR's loader requires it (diffusion-gemma.cpp 232-235).
  c.canvas_length = positive_key(file, "diffusion.canvas_length");
  // Optional in the PR (266-269): without them there is no self-conditioning. PR #24427 names the norm
  // self_cond_norm.
  c.self_conditioning = file.find_tensor("self_cond_gate.weight") != nullptr;
  // The sampler's defaults (diffusion_gemma.py 43-77 writes them from generation_config.json).
  if (file.find("diffusion.eb_max_steps")) c.eb.max_steps = positive_key(file, "diffusion.eb_max_steps");
  if (file.find("diffusion.eb_stability_threshold"))
    c.eb.stability = static_cast<int64_t>(file.get_u64("diffusion.eb_stability_threshold"));
  c.eb.t_min = file.find_f32("diffusion.eb_t_min").value_or(c.eb.t_min);
  c.eb.t_max = file.find_f32("diffusion.eb_t_max").value_or(c.eb.t_max);
  c.eb.entropy_bound = file.find_f32("diffusion.eb_entropy_bound").value_or(c.eb.entropy_bound);
  c.eb.confidence = file.find_f32("diffusion.eb_confidence_threshold").value_or(c.eb.confidence);
  if (!(c.eb.t_min > 0.0f) || !(c.eb.t_max > 0.0f) || !(c.eb.entropy_bound >= 0.0f) ||
      !(c.eb.confidence >= 0.0f))
    throw Error(
        "invalid diffusion.eb_* sampler values in the file (temperatures must be positive, the bound "
        "and the confidence threshold non-negative)");
  if (c.self_conditioning && !file.find_tensor("self_cond_pre_norm.weight") &&
      !file.find_tensor("self_cond_norm.weight"))
    throw missing_tensor("self_cond_pre_norm.weight (or self_cond_norm.weight)");
}

LayerDesc gemma4_layer(const ModelConfig& c, int64_t il) {
  const bool swa = c.swa_layer[static_cast<size_t>(il)];
  LayerDesc d;
  d.qk_norm = true;
  d.rope_mode = RopeMode::kNeox;
  d.head_dim = swa ? c.head_dim_swa : c.head_dim;
  d.n_rot = swa ? c.n_rot_swa : c.n_rot;
  d.rope_freq_base = swa ? c.rope_freq_base_swa : c.rope_freq_base;
  d.rope_freq_factors = !swa;
  d.n_head_kv = c.n_head_kv_layer.empty() ? c.n_head_kv : c.n_head_kv_layer[static_cast<size_t>(il)];
  d.window = swa ? c.n_swa : 0;
  d.ffn = FfnKind::kGegluDenseMoe;
  d.gemma = true;
  d.attn_scale = 1.0f;
  return d;
}

}  // namespace

const Architecture kGemma4Arch = {"gemma4", configure_gemma4,  gemma4_layer, DefaultLoop::kLladaBlocks,
                                  nullptr,  /*causal_lm=*/true};
const Architecture kDiffusionGemmaArch = {"diffusion-gemma", configure_diffusion_gemma, gemma4_layer,
                                          DefaultLoop::kLladaBlocks};

}  // namespace dllm::model
