// What the GPU backend (src/cuda) runs, as functions of the model: the blocks, shapes and weight types
// its kernels implement. GpuForward refuses with these reasons, and engine::unsupported consults them
// before `--device auto` picks the GPU, so both say the same thing. Header-only host code over
// src/model: usable in builds without CUDA, where the decision is still tested.
#pragma once

#include <string>
#include <vector>

#include "gguf/ggml_types.h"
#include "model/layer_desc.h"
#include "model/model.h"

namespace dllm::cuda {

/// Weight types with a GPU matrix kernel (kern::WType): Q4_K, Q6_K, F32, F16, BF16.
inline bool has_matrix_kernel(gguf::GgmlType t) {
  return t == gguf::GgmlType::Q4_K || t == gguf::GgmlType::Q6_K || t == gguf::GgmlType::F32 ||
         t == gguf::GgmlType::F16 || t == gguf::GgmlType::BF16;
}

/// The weight matrices the GPU uploads: every layer's, the token embedding and the LM head.
inline std::vector<const gguf::TensorInfo*> gpu_matrices(const model::Model& m) {
  std::vector<const gguf::TensorInfo*> mats;
  for (const model::LayerWeights& lw : m.layers())
    for (const gguf::TensorInfo* t :
         {lw.attn_q, lw.attn_k, lw.attn_v, lw.attn_output, lw.ffn_gate, lw.ffn_up, lw.ffn_down})
      if (t) mats.push_back(t);
  mats.push_back(&m.token_embd());
  if (&m.output() != &m.token_embd()) mats.push_back(&m.output());
  return mats;
}

/// Why the GPU kernels cannot run the layers of a model with config `c`, or "": the first of its
/// blocks without a GPU kernel (routed experts, Q/K norm, partial RoPE, sliding windows, per-layer
/// RoPE bases or K/V head counts), or a head_dim or width the kernels do not take.
inline std::string lacks_blocks(const model::ModelConfig& c) {
  if (c.is_moe()) return "MoE models run on the CPU only for now";
  const std::vector<model::LayerDesc> layers = model::describe_layers(c);
  for (const model::LayerDesc& d : layers) {
    if (d.qk_norm) return "Q/K-norm layers run on the CPU only for now";
    if (d.n_rot != c.head_dim) return "partial RoPE runs on the CPU only for now";
    if (d.window != 0) return "sliding-window layers run on the CPU only for now";
    if (d.rope_freq_base != layers[0].rope_freq_base)
      return "per-layer RoPE bases run on the CPU only for now";
    if (d.n_head_kv != c.n_head_kv) return "per-layer K/V head counts run on the CPU only for now";
  }
  const int64_t hd = c.head_dim;
  if (hd % 32 != 0 || hd > 256 || hd / 32 == 5 || hd / 32 == 7)
    return "head_dim " + std::to_string(hd) + " has no GPU attention kernel (32, 64, 96, 128, 192, 256)";
  for (const int64_t w : {c.n_embd, c.n_head * hd, c.n_ff})
    if (w % 32 != 0)
      return "model width " + std::to_string(w) + " is not a multiple of 32: the GPU backend needs that";
  return "";
}

/// The first weight matrix of `m` of a type without a GPU kernel (Q8_0, Q5_K, ...), named, or "".
inline std::string lacks_matrix_kernel(const model::Model& m) {
  for (const gguf::TensorInfo* t : gpu_matrices(m))
    if (!has_matrix_kernel(t->type))
      return "tensor " + t->name + " is " + gguf::type_name(t->type) +
             ": GPU matrix kernels exist for Q4_K, Q6_K, F32, F16, BF16";
  return "";
}

/// lacks_blocks, else lacks_matrix_kernel: why GpuForward cannot run `m`, or "".
inline std::string lacks(const model::Model& m) {
  const std::string blocks = lacks_blocks(m.config());
  return blocks.empty() ? lacks_matrix_kernel(m) : blocks;
}

/// The first weight matrix of `m` that is not Q4_K or Q6_K, named with the reason, or "": the GPU runs
/// F32 / F16 / BF16 matrices, but only the Q4_K / Q6_K path was checked against the f64 reference on a
/// GPU (F32 and F16/BF16 mixes ran 2-6e-4 from it on an H200 where positions mix: docs/gpu.md).
inline std::string unverified(const model::Model& m) {
  for (const gguf::TensorInfo* t : gpu_matrices(m))
    if (t->type != gguf::GgmlType::Q4_K && t->type != gguf::GgmlType::Q6_K)
      return t->name + " is " + gguf::type_name(t->type) +
             ": the GPU is checked for Q4_K / Q6_K weights only";
  return "";
}

}  // namespace dllm::cuda
