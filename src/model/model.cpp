// Model::load: binds the GGUF tensors by their llama.cpp names (src/llama-arch.cpp LLM_TENSOR_NAMES):
// token_embd, output_norm, output, and each layer's as its description names them (tensors.h), and
// checks each one's shape and type before any compute.
#include "model/model.h"

#include <map>
#include <string>

#include "base/error.h"
#include "model/arch.h"
#include "model/layer_desc.h"
#include "model/tensors.h"
#include "quant/quant.h"

namespace dllm::model {

namespace {

std::string shape_string(const int64_t* ne, uint32_t n) {
  std::string s = "[";
  for (uint32_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

/// Finds `name` and checks its shape (ggml ne order). Trailing dimensions of 1 are ignored, so a
/// 1-D tensor stored as [n, 1] still matches [n].
const gguf::TensorInfo& require(const gguf::GgufFile& file, const std::string& name,
                                const std::vector<int64_t>& want) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (!t) throw missing_tensor(name);
  bool ok = true;
  for (uint32_t i = 0; i < 4; ++i) {
    const int64_t w = i < want.size() ? want[i] : 1;
    const int64_t have = i < t->n_dims ? t->ne[i] : 1;
    if (w != have) ok = false;
  }
  if (!ok) {
    throw Error("tensor shape mismatch for " + name + ": " + shape_string(t->ne, t->n_dims) + ", expected " +
                shape_string(want.data(), static_cast<uint32_t>(want.size())));
  }
  return *t;
}

/// Checks that our decoders can read the tensor's type (norms, biases, embeddings).
void require_decodable(const gguf::TensorInfo& t) {
  if (!quant::can_dequantize(t.type)) {
    throw Error("unsupported GGUF tensor type: " + gguf::type_name(t.type) + " (tensor " + t.name + ")");
  }
}

std::vector<float> decode_vector(const gguf::GgufFile& file, const gguf::TensorInfo& t) {
  require_decodable(t);
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  quant::dequantize_row(t.type, file.tensor_data(t), v.data(), t.n_elements());
  return v;
}

}  // namespace

Model::Model(const gguf::GgufFile& file) : file_(&file), config_(read_config(file)) {}

Model Model::load(const gguf::GgufFile& file) {
  Model m(file);
  const ModelConfig& c = m.config_;
  auto bind = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const gguf::TensorInfo* t = &require(file, name, shape);
    m.bound_.push_back(t);
    return t;
  };

  m.token_embd_ = bind("token_embd.weight", {c.n_embd, c.n_vocab});
  require_decodable(*m.token_embd_);
  // Every token id the tokenizer can produce must be a row of the embedding (and of the LM head,
  // which has the same rows): a vocabulary longer than the tensors would read past them.
  if (const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
      tokens && tokens->type == gguf::ValueType::ARRAY &&
      static_cast<int64_t>(tokens->items.size()) > m.token_embd_->ne[1]) {
    throw Error("tokenizer.ggml.tokens has " + std::to_string(tokens->items.size()) +
                " entries but token_embd.weight has only " + std::to_string(m.token_embd_->ne[1]) +
                " rows (one per token id): the file is inconsistent");
  }
  if (file.find_tensor("output.weight")) {
    m.output_ = bind("output.weight", {c.n_embd, c.n_vocab});
  } else {
    m.output_ = m.token_embd_;  // tied embeddings (read_config took n_vocab from token_embd)
  }
  m.output_norm_ = decode_vector(file, *bind("output_norm.weight", {c.n_embd}));

  // {arch}.block_count comes from the file: grow the vector as the blocks are found, so a count
  // far beyond the tensors present ends at the first missing one without allocating for all of them.
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const LayerDesc d = describe_layer(c, i);
    LayerWeights& l = m.layers_.emplace_back();
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const TensorSpec& spec : layer_tensors(c, d)) {
      if (spec.optional && file.find_tensor(p + spec.suffix) == nullptr) continue;
      const gguf::TensorInfo* t = bind(p + spec.suffix, spec.ne);
      if (spec.matrix != nullptr)
        l.*spec.matrix = t;
      else
        l.*spec.vector = decode_vector(file, *t);
    }
    if (l.attn_qkv != nullptr) {
      const int64_t n_q = c.n_head * c.head_dim, n_kv = d.n_head_kv * c.head_dim;
      l.attn_q = &m.views_.emplace_back(row_range(*l.attn_qkv, 0, n_q, "Q"));
      l.attn_k = &m.views_.emplace_back(row_range(*l.attn_qkv, n_q, n_kv, "K"));
      l.attn_v = &m.views_.emplace_back(row_range(*l.attn_qkv, n_q + n_kv, n_kv, "V"));
    }
  }
  // Gemma-4: one rope_freqs for every global layer (llama.cpp loads it once and shares it).
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const LayerDesc d = describe_layer(c, i);
    if (d.rope_freq_factors) {
      m.rope_freqs_ = decode_vector(file, *bind("rope_freqs.weight", {d.n_rot / 2}));
      break;
    }
  }
  if (c.self_conditioning) {
    const char* norm =
        file.find_tensor("self_cond_pre_norm.weight") ? "self_cond_pre_norm.weight" : "self_cond_norm.weight";
    m.self_cond_.pre_norm = decode_vector(file, *bind(norm, {c.n_embd}));
    m.self_cond_.gate = bind("self_cond_gate.weight", {c.n_embd, c.n_ff});
    m.self_cond_.up = bind("self_cond_up.weight", {c.n_embd, c.n_ff});
    m.self_cond_.down = bind("self_cond_down.weight", {c.n_ff, c.n_embd});
  }
  return m;
}

gguf::TensorInfo expert_matrix(const gguf::TensorInfo& t, int64_t e) {
  if (t.n_dims != 3 || e < 0 || e >= t.ne[2]) {
    throw Error("expert " + std::to_string(e) + " of tensor " + t.name + ": not a 3-D expert tensor with " +
                "that many experts");
  }
  gguf::TensorInfo m = t;
  m.name = t.name + "[" + std::to_string(e) + "]";
  m.n_dims = 2;
  m.ne[2] = 1;
  m.n_bytes = static_cast<uint64_t>(t.ne[1]) * t.row_bytes();
  m.offset = t.offset + static_cast<uint64_t>(e) * m.n_bytes;
  return m;
}

gguf::TensorInfo row_range(const gguf::TensorInfo& t, int64_t row0, int64_t n_rows, const std::string& part) {
  if (t.n_dims != 2 || row0 < 0 || n_rows <= 0 || row0 + n_rows > t.ne[1])
    throw Error("rows " + std::to_string(row0) + ".." + std::to_string(row0 + n_rows) + " of tensor " +
                t.name + ": not a 2-D tensor with that many rows");
  gguf::TensorInfo m = t;
  m.name = t.name + "[" + part + "]";
  m.ne[1] = n_rows;
  m.n_bytes = static_cast<uint64_t>(n_rows) * t.row_bytes();
  m.offset = t.offset + static_cast<uint64_t>(row0) * t.row_bytes();
  return m;
}

void Model::dequantize_row(const gguf::TensorInfo& t, int64_t row, float* dst) const {
  const uint8_t* src = file_->tensor_data(t) + static_cast<uint64_t>(row) * t.row_bytes();
  quant::dequantize_row(t.type, src, dst, t.ne[0]);
}

std::vector<std::pair<std::string, int>> Model::type_mix() const {
  std::map<uint32_t, int> counts;
  for (const gguf::TensorInfo* t : bound_) ++counts[static_cast<uint32_t>(t->type)];
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [type, n] : counts) out.emplace_back(gguf::type_name(type), n);
  return out;
}

}  // namespace dllm::model
