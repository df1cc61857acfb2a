// read_config: the `{arch}.*` hyperparameters every architecture shares, checked once at load, then
// the architecture's own (arch.h). Keys as written by llama.cpp's converters (gguf-py constants.py,
// Keys.LLM / Keys.Attention / Keys.Rope) and read as llama.cpp's loader reads them
// (src/llama-model.cpp load_hparams, src/models/*.cpp load_arch_hparams).
#include "model/config.h"

#include <algorithm>

#include <string>

#include "base/error.h"
#include "gguf/gguf.h"
#include "model/arch.h"

namespace dllm::model {

namespace {

/// llama.cpp's LLAMA_MAX_EXPERTS (src/llama-hparams.h): a larger expert_count is not a model it loads.
constexpr int64_t kMaxExperts = 1024;

}  // namespace

int64_t positive_key(const gguf::GgufFile& file, const std::string& key) {
  const uint64_t v = file.get_u64(key);
  if (v == 0 || v > (uint64_t{1} << 40)) {
    throw Error("metadata key " + key + " has an invalid value " + std::to_string(v) +
                " (expected a positive count)");
  }
  return static_cast<int64_t>(v);
}

void read_expert_keys(const gguf::GgufFile& file, ModelConfig& c) {
  const std::string a = c.arch_name + ".";
  c.n_expert = positive_key(file, a + "expert_count");
  c.n_expert_used = positive_key(file, a + "expert_used_count");
  if (c.n_expert > kMaxExperts || c.n_expert_used > c.n_expert) {
    throw Error(a + "expert_used_count (" + std::to_string(c.n_expert_used) + ") must be in 1.." + a +
                "expert_count (" + std::to_string(c.n_expert) + "), and expert_count at most " +
                std::to_string(kMaxExperts));
  }
  if (file.find(a + "expert_feed_forward_length")) {
    c.n_ff_exp = positive_key(file, a + "expert_feed_forward_length");
  } else if (c.n_ff > 0 && c.n_ff / c.n_expert_used > 0) {
    c.n_ff_exp = c.n_ff / c.n_expert_used;  // llama.cpp's fallback (llada-moe.cpp, rnd1.cpp)
  } else {
    throw Error("required metadata key missing: " + a + "expert_feed_forward_length");
  }
  c.n_ff_shexp = c.n_ff_exp;
}

ModelConfig read_config(const gguf::GgufFile& file) {
  ModelConfig c;
  c.arch_name = file.get_string("general.architecture");
  c.arch = find_architecture(c.arch_name);
  if (c.arch == nullptr) {
    std::string names;
    for (const Architecture* a : architectures()) names += (names.empty() ? "" : ", ") + std::string(a->name);
    throw Error("unsupported model architecture: " + c.arch_name + " (supported: " + names + ")");
  }
  const std::string a = c.arch_name + ".";
  c.n_layer = positive_key(file, a + "block_count");
  c.n_embd = positive_key(file, a + "embedding_length");
  // The dense FFN width; a MoE file's experts have their own (read_expert_keys), and llama.cpp reads
  // this key as optional for them: required below when the first layer is dense.
  if (file.find(a + "feed_forward_length")) c.n_ff = positive_key(file, a + "feed_forward_length");
  c.n_head = positive_key(file, a + "attention.head_count");
  c.n_ctx_train = positive_key(file, a + "context_length");
  // llama.cpp: head_count_kv defaults to head_count (no GQA).
  // Gemma-4 writes one count per layer (an array): its description reads it (n_head_kv_layer).
  const gguf::Value* kv_heads = file.find(a + "attention.head_count_kv");
  c.n_head_kv = kv_heads == nullptr ? c.n_head
                : kv_heads->type == gguf::ValueType::ARRAY
                    ? c.n_head
                    : positive_key(file, a + "attention.head_count_kv");
  c.rms_eps = file.get_f32(a + "attention.layer_norm_rms_epsilon");
  // llama.cpp's default when the key is absent.
  c.rope_freq_base = file.find_f32(a + "rope.freq_base").value_or(10000.0f);

  if (file.find(a + "attention.key_length")) {
    // llama.cpp: n_embd_head_k = key_length, n_embd_head_v = value_length, both defaulting to
    // n_embd / n_head; the llada-moe and rnd1 graphs assert they are equal.
    c.head_dim = positive_key(file, a + "attention.key_length");
    const int64_t hv = file.find(a + "attention.value_length")
                           ? positive_key(file, a + "attention.value_length")
                           : c.head_dim;
    if (hv != c.head_dim) {
      throw Error(a + "attention.value_length (" + std::to_string(hv) + ") differs from " + a +
                  "attention.key_length (" + std::to_string(c.head_dim) + "): not supported");
    }
  } else {
    if (c.n_embd % c.n_head != 0) {
      throw Error("n_embd (" + std::to_string(c.n_embd) + ", " + a +
                  "embedding_length) is not a multiple of n_head (" + std::to_string(c.n_head) + ", " + a +
                  "attention.head_count)");
    }
    c.head_dim = c.n_embd / c.n_head;
  }
  if (c.head_dim % 2 != 0) {
    throw Error("head_dim " + std::to_string(c.head_dim) + " (n_embd / n_head) is odd: RoPE needs pairs");
  }
  if (c.n_head_kv > c.n_head || c.n_head % c.n_head_kv != 0) {
    throw Error("n_head (" + std::to_string(c.n_head) + ") is not a multiple of n_head_kv (" +
                std::to_string(c.n_head_kv) + ", " + a + "attention.head_count_kv)");
  }
  if (!(c.rms_eps >= 0.0f) || !(c.rope_freq_base > 0.0f)) {
    throw Error("invalid " + a + "attention.layer_norm_rms_epsilon or " + a + "rope.freq_base");
  }
  // Partial rotary embeddings (llama.cpp n_rot): the first rope.dimension_count dims of each head.
  c.n_rot = c.head_dim;
  if (const auto n_rot = file.find_u64(a + "rope.dimension_count")) {
    if (*n_rot == 0 || *n_rot > static_cast<uint64_t>(c.head_dim) || *n_rot % 2 != 0) {
      throw Error(a + "rope.dimension_count is " + std::to_string(*n_rot) +
                  ": expected an even count of at most head_dim (" + std::to_string(c.head_dim) + ")");
    }
    c.n_rot = static_cast<int64_t>(*n_rot);
  }

  c.arch->configure(file, c);
  if (c.n_ff == 0 && c.arch->layer(c, 0).ffn == FfnKind::kDense)
    c.n_ff = positive_key(file, a + "feed_forward_length");

  // The LM head's rows; a file without output.weight ties it to token_embd (as llama.cpp does).
  const gguf::TensorInfo* head = file.find_tensor("output.weight");
  if (!head) head = file.find_tensor("token_embd.weight");
  if (!head) throw missing_tensor("token_embd.weight");
  c.n_vocab = head->n_dims >= 2 ? head->ne[1] : 0;
  return c;
}

}  // namespace dllm::model
