// read_config: the `{arch}.*` hyperparameters of a LLaDA, Dream, LLaDA-MoE or RND1 GGUF file, checked
// once at load. Keys as written by llama.cpp's converters (gguf-py constants.py, Keys.LLM /
// Keys.Attention / Keys.Rope) and read as llama.cpp's loader reads them (src/llama-model.cpp
// load_hparams, src/models/llada-moe.cpp and rnd1.cpp load_arch_hparams).
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

/// llama.cpp's LLAMA_MAX_EXPERTS (src/llama-hparams.h): a larger expert_count is not a model it loads.
constexpr int64_t kMaxExperts = 1024;

}  // namespace

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::kLlada:
      return "llada";
    case Arch::kDream:
      return "dream";
    case Arch::kLladaMoe:
      return "llada-moe";
    case Arch::kRnd1:
      return "rnd1";
  }
  return "?";
}

ModelConfig read_config(const gguf::GgufFile& file) {
  ModelConfig c;
  c.arch_name = file.get_string("general.architecture");
  bool known = false;
  for (const Arch a : {Arch::kLlada, Arch::kDream, Arch::kLladaMoe, Arch::kRnd1}) {
    if (c.arch_name == arch_name(a)) {
      c.arch = a;
      known = true;
    }
  }
  if (!known) {
    throw Error("unsupported model architecture: " + c.arch_name +
                " (supported: llada, dream, llada-moe, rnd1)");
  }
  const bool moe = c.arch == Arch::kLladaMoe || c.arch == Arch::kRnd1;
  const std::string a = c.arch_name + ".";

  c.n_layer = positive(file, a + "block_count");
  c.n_embd = positive(file, a + "embedding_length");
  // The dense FFN width; a MoE file's experts have their own (below), and llama.cpp reads this key as
  // optional for them.
  if (!moe || file.find(a + "feed_forward_length")) c.n_ff = positive(file, a + "feed_forward_length");
  c.n_head = positive(file, a + "attention.head_count");
  c.n_ctx_train = positive(file, a + "context_length");
  // llama.cpp: head_count_kv defaults to head_count (no GQA).
  c.n_head_kv =
      file.find(a + "attention.head_count_kv") ? positive(file, a + "attention.head_count_kv") : c.n_head;
  c.rms_eps = file.get_f32(a + "attention.layer_norm_rms_epsilon");
  // llama.cpp's default when the key is absent.
  c.rope_freq_base = file.find_f32(a + "rope.freq_base").value_or(10000.0f);

  if (file.find(a + "attention.key_length")) {
    // llama.cpp: n_embd_head_k = key_length, n_embd_head_v = value_length, both defaulting to
    // n_embd / n_head; the llada-moe and rnd1 graphs assert they are equal.
    c.head_dim = positive(file, a + "attention.key_length");
    const int64_t hv =
        file.find(a + "attention.value_length") ? positive(file, a + "attention.value_length") : c.head_dim;
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
  // Partial rotary embeddings are not part of either architecture; refuse rather than compute wrongly.
  if (const auto n_rot = file.find_u64(a + "rope.dimension_count");
      n_rot && static_cast<int64_t>(*n_rot) != c.head_dim) {
    throw Error(a + "rope.dimension_count is " + std::to_string(*n_rot) + " but head_dim is " +
                std::to_string(c.head_dim) + ": partial RoPE is not supported");
  }

  // LLaDA: ggml "normal" RoPE (llama.cpp llama_model_rope_type: LLM_ARCH_LLADA is LLAMA_ROPE_TYPE_NORM);
  // Dream (Qwen2), LLaDA-MoE and RND1 (Qwen3-MoE): NEOX. Dream has q/k/v biases (LLM_ARCH_DREAM).
  c.rope_mode = c.arch == Arch::kLlada ? RopeMode::kNorm : RopeMode::kNeox;
  c.has_qkv_bias = c.arch == Arch::kDream || file.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.has_qk_norm = moe;
  // llama-diffusion-cli: diffusion.shift_logits absent means shift, which is what Dream and RND1 files
  // (no key) get; the LLaDA and LLaDA-MoE converters always write false, and a LLaDA-family file without
  // the key keeps LLaDA's unshifted logits.
  c.shift_logits =
      file.find_bool("diffusion.shift_logits").value_or(c.arch == Arch::kDream || c.arch == Arch::kRnd1);

  if (moe) {
    c.n_expert = positive(file, a + "expert_count");
    c.n_expert_used = positive(file, a + "expert_used_count");
    if (c.n_expert > kMaxExperts || c.n_expert_used > c.n_expert) {
      throw Error(a + "expert_used_count (" + std::to_string(c.n_expert_used) + ") must be in 1.." + a +
                  "expert_count (" + std::to_string(c.n_expert) + "), and expert_count at most " +
                  std::to_string(kMaxExperts));
    }
    if (file.find(a + "expert_feed_forward_length")) {
      c.n_ff_exp = positive(file, a + "expert_feed_forward_length");
    } else if (c.n_ff > 0 && c.n_ff / c.n_expert_used > 0) {
      c.n_ff_exp = c.n_ff / c.n_expert_used;  // llama.cpp's fallback (llada-moe.cpp, rnd1.cpp)
    } else {
      throw Error("required metadata key missing: " + a + "expert_feed_forward_length");
    }
    c.expert_weights_norm = c.arch == Arch::kRnd1;
  }

  // The LM head's rows; a file without output.weight ties it to token_embd (as llama.cpp does).
  const gguf::TensorInfo* head = file.find_tensor("output.weight");
  if (!head) head = file.find_tensor("token_embd.weight");
  if (!head) throw Error("required tensor missing: token_embd.weight");
  c.n_vocab = head->n_dims >= 2 ? head->ne[1] : 0;
  return c;
}

}  // namespace dllm::model
