// The weights of a model, bound by their GGUF tensor names (tensors.h: what each layer's blocks name)
// and checked once at load. Matrices stay in the file's mapping (the compute backends prepare them); the
// small tensors (RMSNorm weights, Dream's q/k/v biases, the MoE router) are decoded to f32 copies here.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/config.h"

namespace dllm::model {

/// One transformer block, `blk.N.*`. Matrix shapes in ggml order ne = [n_in, n_out] (n_out rows of
/// n_in contiguous values); hd = head_dim, E = n_expert, f = n_ff_exp.
struct LayerWeights {
  const gguf::TensorInfo* attn_q = nullptr;       ///< [n_embd, n_head * hd]
  const gguf::TensorInfo* attn_k = nullptr;       ///< [n_embd, n_head_kv * hd]
  const gguf::TensorInfo* attn_v = nullptr;       ///< [n_embd, n_head_kv * hd]
  const gguf::TensorInfo* attn_output = nullptr;  ///< [n_head * hd, n_embd]
  /// [n_embd, (n_head + 2 n_head_kv) * hd], rows Q | K | V (ModelConfig::fused_qkv; else nullptr):
  /// attn_q, attn_k and attn_v then point at its three row ranges (qkv_rows).
  const gguf::TensorInfo* attn_qkv = nullptr;
  const gguf::TensorInfo* ffn_gate = nullptr;  ///< [n_embd, n_ff]; nullptr in a MoE model
  const gguf::TensorInfo* ffn_up = nullptr;    ///< [n_embd, n_ff]; nullptr in a MoE model
  const gguf::TensorInfo* ffn_down = nullptr;  ///< [n_ff, n_embd]; nullptr in a MoE model
  std::vector<float> attn_norm;                ///< n_embd
  std::vector<float> ffn_norm;                 ///< n_embd
  std::vector<float> attn_q_bias;              ///< n_head * hd; empty without biases (LLaDA)
  std::vector<float> attn_k_bias;              ///< n_head_kv * hd; empty without biases
  std::vector<float> attn_v_bias;              ///< n_head_kv * hd; empty without biases
  std::vector<float> attn_q_norm;              ///< hd, shared by every head; empty without Q/K norm
  std::vector<float> attn_k_norm;              ///< hd; empty without Q/K norm
  // Mixture of experts (ModelConfig::is_moe()); empty / nullptr otherwise. Expert e of a 3-D tensor is
  // the matrix expert_matrix(t, e).
  std::vector<float> ffn_gate_inp;                  ///< router, E rows x n_embd (ffn_gate_inp [n_embd, E])
  const gguf::TensorInfo* ffn_gate_exps = nullptr;  ///< [n_embd, f, E]
  const gguf::TensorInfo* ffn_up_exps = nullptr;    ///< [n_embd, f, E]
  const gguf::TensorInfo* ffn_down_exps = nullptr;  ///< [f, n_embd, E]
  std::vector<float> exp_probs_b;                   ///< E: the selection bias; empty without one
  /// Shared experts (ModelConfig::n_expert_shared > 0): [n_embd, s] / [s, n_embd], s = n_ff_shexp x
  /// n_expert_shared; nullptr without.
  const gguf::TensorInfo* ffn_gate_shexp = nullptr;
  const gguf::TensorInfo* ffn_up_shexp = nullptr;
  const gguf::TensorInfo* ffn_down_shexp = nullptr;
  // Gemma-4 (LayerDesc::gemma); empty / nullptr otherwise. attn_v may be nullptr there (K is V).
  std::vector<float> post_attention_norm;              ///< n_embd
  std::vector<float> post_ffw_norm;                    ///< n_embd: the whole FFN block's output
  std::vector<float> post_ffw_norm_1;                  ///< n_embd: the dense MLP's output
  std::vector<float> pre_ffw_norm_2;                   ///< n_embd: the experts' input
  std::vector<float> post_ffw_norm_2;                  ///< n_embd: the experts' sum
  std::vector<float> ffn_gate_inp_scale;               ///< n_embd: the router input's scale
  const gguf::TensorInfo* ffn_gate_up_exps = nullptr;  ///< [n_embd, 2f, E]: rows [gate | up]
  std::vector<float> ffn_down_exps_scale;              ///< E: each expert's output scale
  std::vector<float> layer_output_scale;               ///< 1: the layer output's scalar (canvas rows)
  std::vector<float> enc_layer_output_scale;           ///< 1: DiffusionGemma's prompt rows; empty in gemma4
};

/// DiffusionGemma's self-conditioning weights (PR #24423 diffusion-gemma.cpp 266-269, 386-421).
struct SelfCondWeights {
  std::vector<float> pre_norm;             ///< n_embd: self_cond_pre_norm (PR #24427: self_cond_norm)
  const gguf::TensorInfo* gate = nullptr;  ///< [n_embd, n_ff]
  const gguf::TensorInfo* up = nullptr;    ///< [n_embd, n_ff]
  const gguf::TensorInfo* down = nullptr;  ///< [n_ff, n_embd]
};

/// Expert e of a 3-D expert tensor t, ne = [n_in, n_out, n_expert] (llama.cpp stacks the experts'
/// matrices along ne[2]): the 2-D tensor [n_in, n_out] named "<name>[e]" whose bytes are the
/// n_out rows starting e * n_out rows into t (GgufFile::tensor_data of the result points at them).
/// Throws dllm::Error when t is not 3-D or e is outside [0, ne[2]).
gguf::TensorInfo expert_matrix(const gguf::TensorInfo& t, int64_t e);

/// Rows [row0, row0 + n_rows) of the 2-D tensor t as a 2-D tensor [ne[0], n_rows] named
/// "<name>[<part>]" (GgufFile::tensor_data of the result points at those rows): LLaDA2's fused
/// attn_qkv as Q, K and V. Throws dllm::Error when t is not 2-D or the range is outside its rows.
gguf::TensorInfo row_range(const gguf::TensorInfo& t, int64_t row0, int64_t n_rows, const std::string& part);

/// A loaded model: config + every tensor bound by name. Keeps a reference to `file`, which must
/// outlive the Model (the matrices point into its mapping).
class Model {
 public:
  /// Reads the config (read_config) and binds every tensor. Throws dllm::Error with exactly:
  ///   "unsupported model architecture: <arch> (supported: llada, dream, llada-moe, rnd1, llada2, gemma4,
  ///   diffusion-gemma)"
  ///   "required metadata key missing: <key>"
  ///   "required tensor missing: <name>"
  ///   "tensor shape mismatch for <name>: [a, b], expected [c, d]"   (ggml ne order)
  ///   "unsupported GGUF tensor type: <type> (tensor <name>)"        (a type our decoders cannot read)
  ///   "tokenizer.ggml.tokens has <n> entries but token_embd.weight has only <rows> rows ..."
  /// (more rows than tokens is fine: Dream pads its embedding); 3-D expert tensors: "tensor shape
  /// mismatch for <name>: [a, b, c], expected [d, e, f]". Matrix types without a matrix kernel (e.g.
  /// Q8_0) are accepted here and refused by the backend (cpu::make_matrix) with "tensor <name> is <type>:
  /// matrix kernels exist for ...".
  static Model load(const gguf::GgufFile& file);

  // Moved, never copied: the layers point into views_.
  Model(Model&&) = default;
  Model& operator=(Model&&) = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return config_; }
  const gguf::GgufFile& file() const { return *file_; }

  /// token_embd.weight: [n_embd, n_vocab_embd], one n_embd row per token id.
  const gguf::TensorInfo& token_embd() const { return *token_embd_; }
  /// Rows of token_embd: the valid token ids are [0, n_vocab_embd()).
  int64_t n_vocab_embd() const { return token_embd_->ne[1]; }
  /// output.weight: [n_embd, n_vocab] (token_embd.weight when the file has no output.weight: tied).
  const gguf::TensorInfo& output() const { return *output_; }
  /// output_norm.weight decoded, n_embd.
  const std::vector<float>& output_norm() const { return output_norm_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  /// rope_freqs.weight decoded (n_rot/2 frequency divisors of the layers with rope_freq_factors), or
  /// empty.
  const std::vector<float>& rope_freqs() const { return rope_freqs_; }
  /// DiffusionGemma's self-conditioning MLP (ModelConfig::self_conditioning), else all empty.
  const SelfCondWeights& self_cond() const { return self_cond_; }

  /// Bytes of `t` inside the file's mapping.
  const uint8_t* data(const gguf::TensorInfo& t) const { return file_->tensor_data(t); }

  /// Decodes row `row` of `t` (ne[0] values) into dst: the token embedding lookup.
  void dequantize_row(const gguf::TensorInfo& t, int64_t row, float* dst) const;

  /// Counts per ggml type name over every bound tensor, e.g. {"F32": 9, "Q4_K": 25, "Q6_K": 5}, in
  /// type-id order: for --verbose.
  std::vector<std::pair<std::string, int>> type_mix() const;

 private:
  explicit Model(const gguf::GgufFile& file);

  const gguf::GgufFile* file_;
  ModelConfig config_;
  const gguf::TensorInfo* token_embd_ = nullptr;
  const gguf::TensorInfo* output_ = nullptr;
  std::vector<float> output_norm_;
  std::vector<LayerWeights> layers_;
  /// Row ranges of fused tensors (row_range), which LayerWeights point at: a deque, so the addresses
  /// stay put as it grows and when the Model moves.
  std::deque<gguf::TensorInfo> views_;
  std::vector<float> rope_freqs_;
  SelfCondWeights self_cond_;
  std::vector<const gguf::TensorInfo*> bound_;  ///< every tensor bound, for type_mix()
};

}  // namespace dllm::model
