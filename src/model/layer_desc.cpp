// The layer descriptions (layer_desc.h).
#include "model/layer_desc.h"

#include "model/arch.h"

namespace dllm::model {

LayerDesc dense_layer(const ModelConfig& c, int64_t /*il*/) {
  LayerDesc d;
  d.qkv_bias = c.has_qkv_bias;
  d.qk_norm = c.has_qk_norm;
  d.rope_mode = c.rope_mode;
  d.n_rot = c.n_rot;
  d.rope_freq_base = c.rope_freq_base;
  d.n_head_kv = c.n_head_kv;
  d.head_dim = c.head_dim;
  return d;
}

LayerDesc routed_layer(const ModelConfig& c, int64_t il) {
  LayerDesc d = dense_layer(c, il);
  if (il >= c.n_layer_dense_lead) d.ffn = FfnKind::kMoe;
  return d;
}

LayerDesc describe_layer(const ModelConfig& c, int64_t il) {
  return c.arch->layer(c, il);
}

std::vector<LayerDesc> describe_layers(const ModelConfig& c) {
  std::vector<LayerDesc> layers;
  layers.reserve(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) layers.push_back(describe_layer(c, il));
  return layers;
}

}  // namespace dllm::model
