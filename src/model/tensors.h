// The tensors a model binds, as a table: each block of a layer description (layer_desc.h) names its
// tensors (llama.cpp src/llama-arch.cpp LLM_TENSOR_NAMES), their shapes from the config in ggml order
// (ne[0] = row length) and where Model::load keeps them (a matrix left in the mapping, or a small
// tensor decoded to f32). An architecture's tensors are those of the blocks its layers have; a
// block no architecture had before adds its rows here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/config.h"
#include "model/layer_desc.h"

namespace dllm::model {

struct LayerWeights;

/// One tensor of a layer: blk.<il>.<suffix>, bound into a LayerWeights field (exactly one of matrix /
/// vector is set).
struct TensorSpec {
  std::string suffix;                                       ///< e.g. "attn_q.weight"
  std::vector<int64_t> ne;                                  ///< shape, ggml order
  const gguf::TensorInfo* LayerWeights::*matrix = nullptr;  ///< kept in the mapping
  std::vector<float> LayerWeights::*vector = nullptr;       ///< decoded to f32
  bool optional = false;  ///< absent from the file: the field stays null / empty (Gemma-4's attn_v)
};

/// Every tensor layer il of a model with config c binds, as its description d says: attn_norm,
/// attn_{q,k,v,output} (attn_qkv instead of q, k, v with fused_qkv; + biases with qkv_bias, attn_{q,k}_norm
/// with qk_norm), ffn_norm, then ffn_{gate,up,down} (kDense) or ffn_gate_inp and ffn_{gate,up,down}_exps
/// (kMoe; with shared experts ffn_{gate,up,down}_shexp, with a selection bias exp_probs_b.bias); a Gemma-4
/// layer (LayerDesc::gemma) its own set (gemma_layer_tensors in tensors.cpp, as PR #24423's
/// diffusion-gemma.cpp binds them).
std::vector<TensorSpec> layer_tensors(const ModelConfig& c, const LayerDesc& d);

}  // namespace dllm::model
