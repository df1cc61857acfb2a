// read_config: the `{arch}.*` hyperparameters of a LLaDA or Dream GGUF file, checked once at load.
// Keys as written by llama.cpp's converters (gguf-py constants.py, Keys.LLM / Keys.Attention / Keys.Rope).
#include "model/config.h"

#include <string>

#include "base/error.h"
#include "gguf/gguf.h"

namespace dllm::model {

namespace {

int64_t positive(const gguf::GgufFile& file, const std::string& key) {
  const uint64_t v = file.get_u64(key);
  if (v == 0 || v > (uint64_t{1} << 40)) {
    throw Error("metadata key " + key + " has an invalid value " + std::to_string(v) +
                " (expected a positive count)");
  }
  return static_cast<int64_t>(v);
}

}  // namespace

ModelConfig read_config(const gguf::GgufFile& file) {
  ModelConfig c;
  c.arch_name = file.get_string("general.architecture");
  if (c.arch_name == "llada") {
    c.arch = Arch::kLlada;
  } else if (c.arch_name == "dream") {
    c.arch = Arch::kDream;
  } else {
    throw Error("unsupported model architecture: " + c.arch_name + " (supported: llada, dream)");
  }
  const std::string a = c.arch_name + ".";

  c.n_layer = positive(file, a + "block_count");
  c.n_embd = positive(file, a + "embedding_length");
  c.n_ff = positive(file, a + "feed_forward_length");
  c.n_head = positive(file, a + "attention.head_count");
  c.n_ctx_train = positive(file, a + "context_length");
  // llama.cpp: head_count_kv defaults to head_count (no GQA).
  c.n_head_kv =
      file.find(a + "attention.head_count_kv") ? positive(file, a + "attention.head_count_kv") : c.n_head;
  c.rms_eps = file.get_f32(a + "attention.layer_norm_rms_epsilon");
  // llama.cpp's default when the key is absent.
  c.rope_freq_base = file.find_f32(a + "rope.freq_base").value_or(10000.0f);

  if (c.n_embd % c.n_head != 0) {
    throw Error("n_embd (" + std::to_string(c.n_embd) + ", " + a +
                "embedding_length) is not a multiple of n_head (" + std::to_string(c.n_head) + ", " + a +
                "attention.head_count)");
  }
  c.head_dim = c.n_embd / c.n_head;
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
  // Partial rotary embeddings are not part of either architecture; refuse rather than compute wrongly.
  if (const auto n_rot = file.find_u64(a + "rope.dimension_count");
      n_rot && static_cast<int64_t>(*n_rot) != c.head_dim) {
    throw Error(a + "rope.dimension_count is " + std::to_string(*n_rot) + " but head_dim is " +
                std::to_string(c.head_dim) + ": partial RoPE is not supported");
  }

  // LLaDA: ggml "normal" RoPE (llama.cpp llm_arch LLM_ARCH_LLADA uses LLAMA_ROPE_TYPE_NORM);
  // Dream: Qwen2's NEOX RoPE and q/k/v biases (LLM_ARCH_DREAM, LLAMA_ROPE_TYPE_NEOX).
  c.rope_mode = c.arch == Arch::kDream ? RopeMode::kNeox : RopeMode::kNorm;
  c.has_qkv_bias = c.arch == Arch::kDream || file.find_tensor("blk.0.attn_q.bias") != nullptr;
  // llama-diffusion-cli: diffusion.shift_logits absent means shift (Dream); LLaDA files write false.
  c.shift_logits = file.find_bool("diffusion.shift_logits").value_or(c.arch == Arch::kDream);

  // The LM head's rows; a file without output.weight ties it to token_embd (as llama.cpp does).
  const gguf::TensorInfo* head = file.find_tensor("output.weight");
  if (!head) head = file.find_tensor("token_embd.weight");
  if (!head) throw Error("required tensor missing: token_embd.weight");
  c.n_vocab = head->n_dims >= 2 ? head->ne[1] : 0;
  return c;
}

}  // namespace dllm::model
