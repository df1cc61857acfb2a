// describe_layers (layer_desc.h).
#include "model/layer_desc.h"

namespace dllm::model {

std::vector<LayerDesc> describe_layers(const ModelConfig& c) {
  LayerDesc d;
  d.qkv_bias = c.has_qkv_bias;
  d.rope_mode = c.rope_mode;
  d.ffn = FfnKind::kDense;
  return std::vector<LayerDesc>(static_cast<size_t>(c.n_layer), d);
}

}  // namespace dllm::model
