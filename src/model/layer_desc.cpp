// describe_layers (layer_desc.h).
#include "model/layer_desc.h"

namespace dllm::model {

LayerDesc describe_layer(const ModelConfig& c, int64_t /*il*/) {
  LayerDesc d;
  d.qkv_bias = c.has_qkv_bias;
  d.qk_norm = c.has_qk_norm;
  d.rope_mode = c.rope_mode;
  d.ffn = c.is_moe() ? FfnKind::kMoe : FfnKind::kDense;
  return d;
}

std::vector<LayerDesc> describe_layers(const ModelConfig& c) {
  std::vector<LayerDesc> layers;
  layers.reserve(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) layers.push_back(describe_layer(c, il));
  return layers;
}

}  // namespace dllm::model
