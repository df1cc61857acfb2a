// Synthetic LLaDA-8B / Dream-7B / LLaDA-MoE-7B-A1B / RND1 / LLaDA2.0-mini GGUF writer; see synthetic_gguf.h.
#include "synthetic_gguf.h"

#include <cstring>
#include <map>

#include "base/error.h"
#include "gguf/writer.h"

namespace dllm::synth {

namespace {

using gguf::GgmlType;

// ---- Random numbers: per-block streams, so any chunking of the output gives the same bytes ----

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// wyrand (Wang Yi's wyhash PRNG): one 64x64->128 multiply per 8 random bytes.
struct WyRand {
  uint64_t s;
  uint64_t next() {
    s += 0xa0761d6478bd642full;
    const __uint128_t t = static_cast<__uint128_t>(s) * (s ^ 0xe7037ed1a0b428dbull);
    return static_cast<uint64_t>(t >> 64) ^ static_cast<uint64_t>(t);
  }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// IEEE binary16 bits of a finite float (round to nearest; values here are normal f16 numbers).
uint16_t f32_to_f16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((b >> 23) & 0xff) - 127 + 15;
  uint32_t mant = b & 0x7fffffu;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7bffu);  // clamp to the largest finite
  if (exp <= 0) {                                               // subnormal f16
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1u) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000u) ++h;  // round half up; carries into the exponent correctly
  return static_cast<uint16_t>(h);
}

constexpr size_t kQ4KBytes = 144, kQ6KBytes = 210, kQ80Bytes = 34, kQ50Bytes = 22;

/// One Q8_0 block (f16 d, 32 int8) or Q5_0 block (f16 d, qh[4], qs[16]): random quants, d of
/// trained-weight size (rms ~0.03: Q8_0 q ~ 74 rms, Q5_0 ~ 9.2).
void q8_0_or_q5_0_block(GgmlType type, uint64_t key, uint8_t* out) {
  WyRand r{splitmix64(key)};
  uint64_t words[5];
  for (uint64_t& w : words) w = r.next();
  const size_t bytes = type == GgmlType::Q8_0 ? kQ80Bytes : kQ50Bytes;
  std::memcpy(out, words, bytes);
  const double dv = type == GgmlType::Q8_0 ? 4e-4 * (1 + 0.25 * r.unit()) : 3.2e-3 * (1 + 0.25 * r.unit());
  const uint16_t d = f32_to_f16(static_cast<float>(dv));
  std::memcpy(out, &d, 2);
}

/// One Q4_K block (ggml block_q4_K: f16 d, f16 dmin, scales[12], qs[128]): random 6-bit
/// scales/mins and 4-bit quants, d and dmin of trained-weight size.
void q4_k_block(uint64_t key, uint8_t* out) {
  WyRand r{splitmix64(key)};
  uint64_t words[18];
  for (uint64_t& w : words) w = r.next();
  std::memcpy(out, words, kQ4KBytes);
  // x = d * sc * q - dmin * m with sc, m uniform in 0..63 and q in 0..15: dmin = 7.5 d cancels the
  // mean of d * sc * q, so weights are centred (rms ~0.03, like a trained model's ~0.02).
  const double dv = 1e-4 + 5e-5 * r.unit();
  const uint16_t d = f32_to_f16(static_cast<float>(dv));
  const uint16_t dmin = f32_to_f16(static_cast<float>(7.5 * dv));
  std::memcpy(out + 0, &d, 2);
  std::memcpy(out + 2, &dmin, 2);
}

/// One Q6_K block (ggml block_q6_K: ql[128], qh[64], int8 scales[16], f16 d): random quants,
/// scales in [-32, 31], d of trained-weight size.
void q6_k_block(uint64_t key, uint8_t* out) {
  WyRand r{splitmix64(key)};
  uint64_t words[27];
  for (uint64_t& w : words) w = r.next();
  std::memcpy(out, words, kQ6KBytes);
  for (int j = 0; j < 16; ++j)
    out[192 + j] = static_cast<uint8_t>(static_cast<int8_t>((out[192 + j] & 63) - 32));
  const uint16_t d = f32_to_f16(static_cast<float>(6.2e-5 + 3.8e-5 * r.unit()));
  std::memcpy(out + 208, &d, 2);
}

/// Streams random blocks: bytes [offset, offset + n) of the tensor, block k from its own stream.
gguf::TensorFill block_fill(GgmlType type, uint64_t tensor_key) {
  const size_t bs = type == GgmlType::Q4_K   ? kQ4KBytes
                    : type == GgmlType::Q8_0 ? kQ80Bytes
                    : type == GgmlType::Q5_0 ? kQ50Bytes
                                             : kQ6KBytes;
  return [type, tensor_key, bs](uint8_t* dst, uint64_t offset, size_t n) {
    uint8_t block[kQ6KBytes];
    uint64_t k = offset / bs;
    size_t skip = static_cast<size_t>(offset % bs);
    size_t done = 0;
    while (done < n) {
      const uint64_t key = tensor_key ^ (k * 0x9e3779b97f4a7c15ull);
      if (type == GgmlType::Q4_K) {
        q4_k_block(key, block);
      } else if (type == GgmlType::Q8_0 || type == GgmlType::Q5_0) {
        q8_0_or_q5_0_block(type, key, block);
      } else {
        q6_k_block(key, block);
      }
      const size_t take = std::min(bs - skip, n - done);
      std::memcpy(dst + done, block + skip, take);
      done += take;
      skip = 0;
      ++k;
    }
  };
}

// ---- Tokenizer metadata ------------------------------------------------------------------------

// gguf-py TokenType values.
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

/// UTF-8 of a code point below 0x800 (all GPT-2 byte-level characters are).
std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

/// The 256 byte-level tokens in GPT-2's order (bytes_to_unicode in openai/gpt-2 encoder.py: the
/// printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ map to themselves, the others to 256, 257, ...).
std::vector<std::string> byte_tokens() {
  std::vector<std::string> out;
  std::vector<bool> printable(256, false);
  for (int b = 0; b < 256; ++b)
    printable[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  for (int b = 0; b < 256; ++b)
    if (printable[b]) out.push_back(utf8(static_cast<uint32_t>(b)));
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b)
    if (!printable[b]) out.push_back(utf8(next++));
  return out;
}

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
};

/// Byte tokens, a few merged tokens, unique filler tokens up to `n_normal`, then `specials`
/// (id -> text, type) and `[PAD{id}]` UNUSED rows up to n_vocab.
Vocab make_vocab(uint32_t n_normal, uint32_t n_vocab,
                 const std::map<uint32_t, std::pair<std::string, int32_t>>& specials) {
  Vocab v;
  v.tokens = byte_tokens();
  const std::string G = utf8(0x120);  // 'Ġ' = byte-level space
  // Merges in priority order; each result is added to the vocabulary right after the bytes.
  const std::pair<std::string, std::string> merges[] = {
      {G, "t"},   {G, "a"},        {"h", "e"}, {"i", "n"}, {"r", "e"},
      {"o", "n"}, {G + "t", "he"}, {"e", "r"}, {G, "s"},   {"a", "t"},
  };
  for (const auto& [a, b] : merges) {
    v.merges.push_back(a + " " + b);
    v.tokens.push_back(a + b);
  }
  v.types.assign(v.tokens.size(), kNormal);
  for (uint32_t id = static_cast<uint32_t>(v.tokens.size()); id < n_normal; ++id) {
    v.tokens.push_back("[FILL" + std::to_string(id) + "]");
    v.types.push_back(kNormal);
  }
  for (uint32_t id = n_normal; id < n_vocab; ++id) {
    auto it = specials.find(id);
    if (it != specials.end()) {
      v.tokens.push_back(it->second.first);
      v.types.push_back(it->second.second);
    } else {
      v.tokens.push_back("[PAD" + std::to_string(id) + "]");
      v.types.push_back(kUnused);
    }
  }
  return v;
}

/// LLaDA-8B-Instruct's added tokens (tokenizer_config.json): ids 126080..126348, all special.
std::map<uint32_t, std::pair<std::string, int32_t>> llada_specials() {
  std::map<uint32_t, std::pair<std::string, int32_t>> s;
  auto add = [&](uint32_t id, std::string t) { s[id] = {std::move(t), kControl}; };
  add(126080, "<|startoftext|>");
  add(126081, "<|endoftext|>");
  add(126082, "[CLS]");
  add(126083, "[gMASK]");
  for (uint32_t i = 0; i < 256; ++i) add(126084 + i, "<|reserved_token_" + std::to_string(i) + "|>");
  add(126336, "<|mdm_mask|>");  // replaces reserved_token_252
  add(126340, "<role>");
  add(126341, "</role>");
  add(126342, "<|arithmetic_start|>");
  add(126343, "<|arithmetic_end|>");
  add(126344, "<|number_start|>");
  add(126345, "<|number_end|>");
  add(126346, "<|start_header_id|>");
  add(126347, "<|end_header_id|>");
  add(126348, "<|eot_id|>");
  return s;
}

/// Dream-v0-Instruct-7B's added tokens 151643..151666 (special ones CONTROL, others USER_DEFINED,
/// as llama.cpp's converter types them).
std::map<uint32_t, std::pair<std::string, int32_t>> dream_specials() {
  const char* names[] = {"<|endoftext|>",      "<|im_start|>",     "<|im_end|>",      "<|object_ref_start|>",
                         "<|object_ref_end|>", "<|box_start|>",    "<|box_end|>",     "<|quad_start|>",
                         "<|quad_end|>",       "<|vision_start|>", "<|vision_end|>",  "<|vision_pad|>",
                         "<|image_pad|>",      "<|video_pad|>",    "<tool_call>",     "</tool_call>",
                         "<|fim_prefix|>",     "<|fim_middle|>",   "<|fim_suffix|>",  "<|fim_pad|>",
                         "<|repo_name|>",      "<|file_sep|>",     "<|beginoftext|>", "<|mask|>"};
  std::map<uint32_t, std::pair<std::string, int32_t>> s;
  for (uint32_t k = 0; k < 24; ++k) {
    const uint32_t id = 151643 + k;
    const bool user_defined = id >= 151657 && id <= 151664;
    s[id] = {names[k], user_defined ? kUserDefined : kControl};
  }
  return s;
}

/// LLaDA-MoE's ids that its runtimes hard-code: mask 156895 (llama.cpp conversion/llada.py
/// LLaDAMoEModel writes add_mask_token_id(156895)), EOS / pad 156892 (inclusionAI dInfer
/// tests/test_llada_moe.py: ThresholdParallelDecoder(mask_id=156895, eos_id=156892)). The role markers'
/// ids and every other token are placeholders of ours: the real 157184-token Ling vocabulary is not
/// needed for speed.
std::map<uint32_t, std::pair<std::string, int32_t>> llada_moe_specials() {
  std::map<uint32_t, std::pair<std::string, int32_t>> s;
  s[156891] = {"<|startoftext|>", kControl};
  s[156892] = {"<|endoftext|>", kControl};
  s[156895] = {"<|mask|>", kControl};
  s[156896] = {"<role>", kControl};
  s[156897] = {"</role>", kControl};
  s[156898] = {"<|role_end|>", kControl};
  return s;
}

/// RND1-Base's tokenizer is Qwen3's: Qwen2.5's added tokens 151643..151664, Qwen3's 151665..151668
/// (<tool_response>, </tool_response>, <think>, </think>), and the mask 151669 (radicalnumerics RND1
/// rnd/sampling.py: mask_token_id = 151669, eos_token_id = 151645). The mask's text is ours.
std::map<uint32_t, std::pair<std::string, int32_t>> rnd1_specials() {
  auto s = dream_specials();
  s.erase(151665);
  s.erase(151666);
  s[151665] = {"<tool_response>", kUserDefined};
  s[151666] = {"</tool_response>", kUserDefined};
  s[151667] = {"<think>", kUserDefined};
  s[151668] = {"</think>", kUserDefined};
  s[151669] = {"<|mask|>", kControl};
  return s;
}

// LLaDA-8B-Instruct tokenizer_config.json chat_template (exact string; the \n are real newlines).
const char* kLladaTemplate =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + "
    "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}"
    "{% endfor %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}";

// ChatML with Qwen2.5's default system prompt (a shortened form of Dream's template, without the
// tool-call branches; \\n is a Jinja escape inside a string literal, as in Qwen's template).
const char* kDreamTemplate =
    "{%- for message in messages %}{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

// LLaDA-MoE-7B-A1B-Instruct's role format as a Jinja template of ours (the rendering llama.cpp's
// src/llama-chat.cpp gives LLM_CHAT_TEMPLATE_BAILING2; see src/tokenizer/chat.cpp), so llama.cpp and
// we both recognise and render it.
const char* kLladaMoeTemplate =
    "{%- if not (messages|length > 0 and messages[0]['role'] == 'system') %}"
    "{{- '<role>SYSTEM</role>detailed thinking off<|role_end|>' }}{%- endif %}"
    "{%- for message in messages %}{%- if message['role'] == 'user' %}"
    "{{- '<role>HUMAN</role>' + message['content'] + '<|role_end|>' }}{%- else %}"
    "{{- '<role>' + message['role'] | upper + '</role>' + message['content'] + '<|role_end|>' }}{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<role>ASSISTANT</role>' }}{%- endif %}";

bool use_more_bits(uint32_t i, uint32_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

}  // namespace

Spec spec_for(const std::string& arch, uint32_t layers, bool tiny) {
  Spec s;
  const bool ling2 = arch == "llada2" || arch == "bailingmoe2";
  if (tiny && !ling2) throw UsageError("--tiny is only for --arch llada2 or bailingmoe2");
  if (ling2 && !tiny) {
    // LLaDA2.0-mini (dFactory configs/model_configs/llada2_mini/config.json; ../shared/notes/
    // block-diffusion.md): 20 layers, hidden 2048, 16 / 4 heads of head_dim 128, intermediate_size 5120
    // on the first_k_dense_replace = 1 dense layer, 256 experts of moe_intermediate_size 512, 8 per
    // token, n_group 8, topk_group 4, one shared expert, score_function sigmoid, norm_topk_prob,
    // routed_scaling_factor 2.5, rope_theta 600000 with partial_rotary_factor 0.5 (64 of 128 dims),
    // rms_norm_eps 1e-6, max_position_embeddings 16384, vocab 157184 (the Ling tokenizer: mask 156895,
    // EOS / pad 156892). The converter (llama.cpp convert_hf_to_gguf.py BailingMoeV2Model, and
    // LLaDA2MoeModel for llada2) writes these under the bailingmoe2 key names.
    s = Spec{arch,         "synthetic-llada2-mini-16b-a1b",
             20,           2048,
             16,           4,
             5120,         157184,
             16384,        600000.0f,
             1e-6f,        false,
             "bailingmoe2"};
    s.n_expert = 256;
    s.n_expert_used = 8;
    s.n_ff_exp = 512;
    s.n_expert_group = 8;
    s.n_expert_group_used = 4;
    s.n_ff_shexp = 512;
    s.n_rot = 64;
    s.head_dim = 128;
  } else if (ling2) {
    // ../shared/reference/tiny-llada2-q4km.gguf's shape (its README section): 4 layers, hidden 256, 4 / 2
    // heads of 64, dense FFN 512 on layer 0, 16 experts of 256 in 4 groups (2 kept), 4 used, one
    // shared expert of 256, 32 rotated dims, context 4096. The tokenizer stays the full size's.
    s = Spec{arch,         "synthetic-llada2-tiny", 4, 256, 4, 2, 512, 157184, 4096, 600000.0f, 1e-6f, false,
             "bailingmoe2"};
    s.n_expert = 16;
    s.n_expert_used = 4;
    s.n_ff_exp = 256;
    s.n_expert_group = 4;
    s.n_expert_group_used = 2;
    s.n_ff_shexp = 256;
    s.n_rot = 32;
    s.head_dim = 64;
  }
  if (ling2) {
    s.ling2 = true;
    s.n_layer_dense_lead = 1;
    s.n_expert_shared = 1;
    s.expert_gating_func = 2;  // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
    s.expert_weights_norm = true;
    s.expert_weights_scale = 2.5f;
  } else if (arch == "llada") {
    s = Spec{"llada", "synthetic-llada-8b", 32, 4096, 32, 32, 12288, 126464, 4096, 500000.0f, 1e-5f,
             false,   "bailingmoe"};
  } else if (arch == "dream") {
    s = Spec{"dream", "synthetic-dream-7b", 28,    3584, 28,     4, 18944, 152064,
             131072,  1000000.0f,           1e-6f, true, "qwen2"};
  } else if (arch == "llada-moe") {
    // LLaDA-MoE-7B-A1B (inclusionAI/LLaDA-MoE-7B-A1B-Instruct config.json as quoted in public code:
    // hidden_size 2048, num_hidden_layers 16, num_attention_heads 16, num_key_value_heads 16,
    // num_experts 64, num_experts_per_tok 8, expert_intermediate_size 1024, dense_intermediate_size
    // 8192, rope_theta 50000, max_position_embeddings 8192; vocab 157184, the Ling tokenizer's).
    // head_dim 128 = 2048 / 16, so no key_length key, as llama.cpp's converter writes it.
    s = Spec{"llada-moe", "synthetic-llada-moe-7b-a1b",
             16,          2048,
             16,          16,
             8192,        157184,
             8192,        50000.0f,
             1e-5f,       false,
             "llada-moe"};
    s.n_expert = 64;
    s.n_expert_used = 8;
    s.n_ff_exp = 1024;
  } else if (arch == "rnd1") {
    // RND1-Base-0910 is Qwen3-30B-A3B converted to diffusion (RND1 README): 48 layers, hidden 2048,
    // 32 query heads, 4 KV groups, head_dim (kv-channels) 128, 128 experts, top 8, moe ffn 768, dense
    // ffn 6144, vocab 151936, rope base 1e6, eps 1e-6, untied embeddings (Qwen3-30B-A3B shapes as
    // e.g. THUDM slime scripts/models/qwen3-30B-A3B.sh spells them).
    s = Spec{"rnd1", "synthetic-rnd1-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 32768, 1000000.0f, 1e-6f, false,
             "qwen2"};
    s.n_expert = 128;
    s.n_expert_used = 8;
    s.n_ff_exp = 768;
    s.head_dim = 128;
  } else if (arch == "diffusion-gemma") {
    // DiffusionGemma 26B-A4B as llama.cpp PR #24423's converter writes it (../shared/notes/
    // block-diffusion.md; tests/data/diffusion-gemma/README.md): 30 layers, hidden 2816, 16 heads,
    // sliding layers 8 KV heads of 256 (window 1024, RoPE 1e4 over all 256 dims), global layers 5, 11,
    // 17, 23, 29 with 2 KV heads of 512, no attn_v, RoPE 1e6 with rope_freqs (a quarter of the dims
    // rotated), 128 experts of 704 with 8 used plus a dense MLP of 2112, vocabulary 262144, canvas 256.
    s = Spec{arch,    "synthetic-diffusion-gemma-26b-a4b",
             30,      2816,
             16,      8,
             2112,    262144,
             262144,  1000000.0f,
             1e-6f,   false,
             "gemma4"};
    s.n_expert = 128;
    s.n_expert_used = 8;
    s.n_ff_exp = 704;
    s.head_dim = 512;
    s.tied_output = true;
    s.gemma = true;
  } else {
    throw UsageError("unknown --arch '" + arch +
                     "' (supported: llada, dream, llada-moe, rnd1, llada2, bailingmoe2, diffusion-gemma)");
  }
  if (layers > 0) s.n_layer = layers;
  return s;
}

namespace {

/// DiffusionGemma: global (full-attention) layers are every sixth, as in the 26B (5, 11, ..., 29); with
/// fewer layers the last one is global too, so a short file has both kinds.
bool gemma_global(uint32_t i, uint32_t n) {
  return i % 6 == 5 || i + 1 == n;
}

/// llama-quantize's fallback for rows that are not whole 256-blocks (llama-quant.cpp: Q4_K -> Q5_0,
/// Q6_K -> Q8_0): the real file's 2112- and 704-wide down projections.
GgmlType fallback(GgmlType t) {
  return t == GgmlType::Q6_K ? GgmlType::Q8_0 : GgmlType::Q5_0;
}

/// DiffusionGemma's tensors (PR #24423 src/models/diffusion-gemma.cpp load_arch_tensors), sorted by
/// name within a layer; the type mix is llama-quantize's Q4_K_M as for the other MoE files, with the
/// fallback above for rows of 2112 and 704.
std::vector<TensorPlan> gemma_tensor_plan(const Spec& s) {
  const int64_t embd = s.n_embd, ff = s.n_ff, vocab = s.n_vocab, E = s.n_expert, f = s.n_ff_exp;
  const int64_t hd_swa = 256, kv_swa = 8, hd_full = s.head_dim, kv_full = 2;
  std::vector<TensorPlan> plan;
  plan.push_back({"output_norm.weight", GgmlType::F32, {embd}});
  plan.push_back({"rope_freqs.weight", GgmlType::F32, {hd_full / 2}});
  plan.push_back({"self_cond_down.weight", fallback(GgmlType::Q4_K), {ff, embd}});
  plan.push_back({"self_cond_gate.weight", GgmlType::Q4_K, {embd, ff}});
  plan.push_back({"self_cond_pre_norm.weight", GgmlType::F32, {embd}});
  plan.push_back({"self_cond_up.weight", GgmlType::Q4_K, {embd, ff}});
  plan.push_back({"token_embd.weight", GgmlType::Q6_K, {embd, vocab}});
  for (uint32_t i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const bool global = gemma_global(i, s.n_layer);
    const int64_t hd = global ? hd_full : hd_swa, kv = (global ? kv_full : kv_swa) * hd, q = s.n_head * hd;
    const GgmlType more = use_more_bits(i, s.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
    plan.push_back({p + "attn_k.weight", GgmlType::Q4_K, {embd, kv}});
    plan.push_back({p + "attn_k_norm.weight", GgmlType::F32, {hd}});
    plan.push_back({p + "attn_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "attn_output.weight", GgmlType::Q4_K, {q, embd}});
    plan.push_back({p + "attn_q.weight", GgmlType::Q4_K, {embd, q}});
    plan.push_back({p + "attn_q_norm.weight", GgmlType::F32, {hd}});
    if (!global) plan.push_back({p + "attn_v.weight", more, {embd, kv}});
    plan.push_back({p + "enc_layer_output_scale.weight", GgmlType::F32, {1}});
    plan.push_back({p + "ffn_down.weight", fallback(more), {ff, embd}});
    plan.push_back({p + "ffn_down_exps.scale", GgmlType::F32, {E}});
    plan.push_back({p + "ffn_down_exps.weight", fallback(more), {f, embd, E}});
    plan.push_back({p + "ffn_gate.weight", GgmlType::Q4_K, {embd, ff}});
    plan.push_back({p + "ffn_gate_inp.scale", GgmlType::F32, {embd}});
    plan.push_back({p + "ffn_gate_inp.weight", GgmlType::F32, {embd, E}});
    plan.push_back({p + "ffn_gate_up_exps.weight", GgmlType::Q4_K, {embd, 2 * f, E}});
    plan.push_back({p + "ffn_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "ffn_up.weight", GgmlType::Q4_K, {embd, ff}});
    plan.push_back({p + "layer_output_scale.weight", GgmlType::F32, {1}});
    plan.push_back({p + "post_attention_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "post_ffw_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "post_ffw_norm_1.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "post_ffw_norm_2.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "pre_ffw_norm_2.weight", GgmlType::F32, {embd}});
  }
  return plan;
}

/// Gemma 4's tokenizer layout (gemma4 model: raw UTF-8 pieces, U+2581 for spaces, <0xXX> bytes): the
/// special ids of the real vocabulary (0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4 <mask>, 5 <|turn>,
/// 6 <turn|>, 7 <|channel>, 8 <channel|>), the 256 byte tokens, then placeholder pieces of ours.
void add_gemma_vocab(gguf::GgufWriter& w, uint32_t n_vocab) {
  std::vector<std::string> tokens = {"<pad>",   "<eos>",   "<bos>",      "<unk>",     "<mask>",
                                     "<|turn>", "<turn|>", "<|channel>", "<channel|>"};
  std::vector<int32_t> types(tokens.size(), kControl);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    tokens.push_back(hex);
    types.push_back(6);  // BYTE
  }
  for (uint32_t i = static_cast<uint32_t>(tokens.size()); i < n_vocab; ++i) {
    tokens.push_back("\xE2\x96\x81t" + std::to_string(i));
    types.push_back(kNormal);
  }
  w.add_string("tokenizer.ggml.model", "gemma4");
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(tokens.size(), -1000.0f));
  w.add_i32_array("tokenizer.ggml.token_type", types);
  w.add_string_array("tokenizer.ggml.merges", {});
  w.add_u32("tokenizer.ggml.bos_token_id", 2);
  w.add_u32("tokenizer.ggml.eos_token_id", 1);
  w.add_u32("tokenizer.ggml.unknown_token_id", 3);
  w.add_u32("tokenizer.ggml.padding_token_id", 0);
  w.add_u32("tokenizer.ggml.mask_token_id", 4);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_space_prefix", false);
  w.add_string(
      "tokenizer.chat_template",
      "{{- bos_token -}}{%- for message in messages -%}{%- set role = 'model' if message['role'] == "
      "'assistant' else message['role'] -%}{{- '<|turn>' + role + '\\n' + (message['content'] | trim) + "
      "'<turn|>\\n' -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- "
      "'<|turn>model\\n<|channel>thought\\n<channel|>' -}}{%- endif -%}");
}

/// The keys PR #24423's converter writes (conversion/diffusion_gemma.py and Gemma4Model), in its order.
void add_gemma_keys(gguf::GgufWriter& w, const Spec& s) {
  const std::string a = s.arch + ".";
  std::vector<int32_t> kv_heads;
  std::vector<uint32_t> swa;
  for (uint32_t i = 0; i < s.n_layer; ++i) {
    kv_heads.push_back(gemma_global(i, s.n_layer) ? 2 : 8);
    swa.push_back(gemma_global(i, s.n_layer) ? 0 : 1);
  }
  w.add_u32(a + "block_count", s.n_layer);
  w.add_u32(a + "context_length", s.n_ctx);
  w.add_u32(a + "embedding_length", s.n_embd);
  w.add_u32(a + "feed_forward_length", s.n_ff);
  w.add_u32(a + "attention.head_count", s.n_head);
  w.add_i32_array(a + "attention.head_count_kv", kv_heads);
  w.add_f32(a + "rope.freq_base", s.rope_freq_base);
  w.add_f32(a + "rope.freq_base_swa", 10000.0f);
  w.add_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.add_u32(a + "expert_count", s.n_expert);
  w.add_u32(a + "expert_used_count", s.n_expert_used);
  w.add_u32(a + "attention.key_length", s.head_dim);
  w.add_u32(a + "attention.value_length", s.head_dim);
  w.add_f32(a + "final_logit_softcapping", 30.0f);
  w.add_u32(a + "attention.sliding_window", 1024);
  w.add_u32(a + "attention.shared_kv_layers", 0);
  w.add_u32(a + "embedding_length_per_layer_input", 0);
  gguf::Value pattern;
  pattern.type = gguf::ValueType::ARRAY;
  pattern.elem_type = gguf::ValueType::BOOL;
  for (const uint32_t b : swa) {
    gguf::Value e;
    e.type = gguf::ValueType::BOOL;
    e.u = b;
    pattern.items.push_back(e);
  }
  w.add_value(a + "attention.sliding_window_pattern", pattern);
  w.add_u32(a + "attention.key_length_swa", 256);
  w.add_u32(a + "attention.value_length_swa", 256);
  w.add_u32(a + "expert_feed_forward_length", s.n_ff_exp);
  w.add_u32(a + "rope.dimension_count", s.head_dim);
  w.add_u32(a + "rope.dimension_count_swa", 256);
  w.add_bool(a + "attention.causal", false);
  w.add_u32("diffusion.canvas_length", 256);
  w.add_u32("diffusion.eb_max_steps", 48);
  w.add_f32("diffusion.eb_t_min", 0.4f);
  w.add_f32("diffusion.eb_t_max", 0.8f);
  w.add_f32("diffusion.eb_entropy_bound", 0.1f);
  w.add_u32("diffusion.eb_stability_threshold", 1);
  w.add_f32("diffusion.eb_confidence_threshold", 0.005f);
}

}  // namespace

std::vector<TensorPlan> tensor_plan(const Spec& s) {
  if (s.gemma) return gemma_tensor_plan(s);
  const int64_t embd = s.n_embd, ff = s.n_ff, vocab = s.n_vocab;
  const int64_t hd = s.head_dim ? s.head_dim : s.n_embd / s.n_head;
  const int64_t q = hd * s.n_head, kv = hd * s.n_head_kv;
  std::vector<TensorPlan> plan;
  if (!s.tied_output) plan.push_back({"output.weight", GgmlType::Q6_K, {embd, vocab}});
  plan.push_back({"output_norm.weight", GgmlType::F32, {embd}});
  // A tied embedding is quantized as the output tensor (llama-quant.cpp: has_tied_embeddings).
  plan.push_back({"token_embd.weight", s.tied_output ? GgmlType::Q6_K : GgmlType::Q4_K, {embd, vocab}});
  for (uint32_t i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const GgmlType more = use_more_bits(i, s.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
    if (s.ling2) {
      // llama.cpp src/llama-model.cpp, case LLM_ARCH_BAILINGMOE2 / LLM_ARCH_LLADA2; sorted by name.
      const int64_t E = s.n_expert, f = s.n_ff_exp, fs = s.n_ff_shexp;
      plan.push_back({p + "attn_k_norm.weight", GgmlType::F32, {hd}});
      plan.push_back({p + "attn_norm.weight", GgmlType::F32, {embd}});
      plan.push_back({p + "attn_output.weight", GgmlType::Q4_K, {q, embd}});
      plan.push_back({p + "attn_q_norm.weight", GgmlType::F32, {hd}});
      plan.push_back({p + "attn_qkv.weight", more, {embd, q + 2 * kv}});
      if (i < s.n_layer_dense_lead) {
        plan.push_back({p + "ffn_down.weight", more, {ff, embd}});
        plan.push_back({p + "ffn_gate.weight", GgmlType::Q4_K, {embd, ff}});
        plan.push_back({p + "ffn_norm.weight", GgmlType::F32, {embd}});
        plan.push_back({p + "ffn_up.weight", GgmlType::Q4_K, {embd, ff}});
        continue;
      }
      plan.push_back({p + "exp_probs_b.bias", GgmlType::F32, {E}});
      plan.push_back({p + "ffn_down_exps.weight", more, {f, embd, E}});
      plan.push_back({p + "ffn_down_shexp.weight", more, {fs, embd}});
      plan.push_back({p + "ffn_gate_exps.weight", GgmlType::Q4_K, {embd, f, E}});
      plan.push_back({p + "ffn_gate_inp.weight", GgmlType::F32, {embd, E}});
      plan.push_back({p + "ffn_gate_shexp.weight", GgmlType::Q4_K, {embd, fs}});
      plan.push_back({p + "ffn_norm.weight", GgmlType::F32, {embd}});
      plan.push_back({p + "ffn_up_exps.weight", GgmlType::Q4_K, {embd, f, E}});
      plan.push_back({p + "ffn_up_shexp.weight", GgmlType::Q4_K, {embd, fs}});
      continue;
    }
    if (s.n_expert > 0) {
      // Sorted by name, as llama-quantize writes them (the order of ../shared/reference's MoE files).
      if (s.n_expert == 8)
        throw Error("8-expert models get llama-quantize's Q8_0 / Q5_K rules: not written here");
      const int64_t E = s.n_expert, f = s.n_ff_exp;
      plan.push_back({p + "attn_k.weight", GgmlType::Q4_K, {embd, kv}});
      plan.push_back({p + "attn_k_norm.weight", GgmlType::F32, {hd}});
      plan.push_back({p + "attn_norm.weight", GgmlType::F32, {embd}});
      plan.push_back({p + "attn_output.weight", GgmlType::Q4_K, {q, embd}});
      plan.push_back({p + "attn_q.weight", GgmlType::Q4_K, {embd, q}});
      plan.push_back({p + "attn_q_norm.weight", GgmlType::F32, {hd}});
      plan.push_back({p + "attn_v.weight", more, {embd, kv}});
      plan.push_back({p + "ffn_down_exps.weight", more, {f, embd, E}});
      plan.push_back({p + "ffn_gate_exps.weight", GgmlType::Q4_K, {embd, f, E}});
      plan.push_back({p + "ffn_gate_inp.weight", GgmlType::F32, {embd, E}});
      plan.push_back({p + "ffn_norm.weight", GgmlType::F32, {embd}});
      plan.push_back({p + "ffn_up_exps.weight", GgmlType::Q4_K, {embd, f, E}});
      continue;
    }
    // Sorted by name, as llama-quantize writes them.
    if (s.qkv_bias) plan.push_back({p + "attn_k.bias", GgmlType::F32, {kv}});
    plan.push_back({p + "attn_k.weight", GgmlType::Q4_K, {embd, kv}});
    plan.push_back({p + "attn_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "attn_output.weight", GgmlType::Q4_K, {embd, embd}});
    if (s.qkv_bias) plan.push_back({p + "attn_q.bias", GgmlType::F32, {embd}});
    plan.push_back({p + "attn_q.weight", GgmlType::Q4_K, {embd, embd}});
    if (s.qkv_bias) plan.push_back({p + "attn_v.bias", GgmlType::F32, {kv}});
    plan.push_back({p + "attn_v.weight", more, {embd, kv}});
    plan.push_back({p + "ffn_down.weight", more, {ff, embd}});
    plan.push_back({p + "ffn_gate.weight", GgmlType::Q4_K, {embd, ff}});
    plan.push_back({p + "ffn_norm.weight", GgmlType::F32, {embd}});
    plan.push_back({p + "ffn_up.weight", GgmlType::Q4_K, {embd, ff}});
  }
  return plan;
}

void write_synthetic_gguf(const Spec& s, const std::string& path, uint64_t seed) {
  gguf::GgufWriter w;
  const std::string a = s.arch + ".";
  const bool llada = s.arch == "llada";
  w.add_string("general.architecture", s.arch);
  w.add_string("general.type", "model");
  w.add_string("general.name", s.name);
  if (s.gemma) {
    add_gemma_keys(w, s);
    add_gemma_vocab(w, s.n_vocab);
  }
  if (!s.gemma) {
    w.add_u32(a + "block_count", s.n_layer);
    w.add_u32(a + "context_length", s.n_ctx);
    w.add_u32(a + "embedding_length", s.n_embd);
    w.add_u32(a + "feed_forward_length", s.n_ff);
    w.add_u32(a + "attention.head_count", s.n_head);
    w.add_u32(a + "attention.head_count_kv", s.n_head_kv);
    w.add_f32(a + "rope.freq_base", s.rope_freq_base);
    w.add_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    // Ling 2.0's converter writes no attention.causal: llama.cpp runs bailingmoe2 causally, and PR #17454's
    // llama-diffusion-cli turns causal attention off itself (llama_set_causal_attn) for llada2.
    if (!s.ling2) w.add_bool(a + "attention.causal", false);
    const bool llada_moe = s.arch == "llada-moe", rnd1 = s.arch == "rnd1";
    if (s.n_expert > 0) {
      // The keys llama.cpp's converters write (the MoE files in ../shared/reference have the same).
      w.add_u32(a + "expert_count", s.n_expert);
      w.add_u32(a + "expert_used_count", s.n_expert_used);
      w.add_u32(a + "expert_feed_forward_length", s.n_ff_exp);
    }
    if (s.head_dim) {
      w.add_u32(a + "attention.key_length", s.head_dim);
      w.add_u32(a + "attention.value_length", s.head_dim);
    }
    if (llada || llada_moe) {
      if (llada) w.add_u32(a + "vocab_size", s.n_vocab);
      w.add_u32(a + "rope.dimension_count", s.n_embd / s.n_head);
      w.add_bool("diffusion.shift_logits", false);
    }
    if (s.ling2) {
      // The keys llama.cpp's BailingMoeV2Model converter writes and its bailingmoe2 / llada2 loader reads
      // (src/llama-model.cpp load_hparams: leading_dense_block_count, expert_shared_*, expert_weights_*,
      // expert_gating_func; the generic expert_group_count / expert_group_used_count, rope.dimension_count,
      // vocab_size). LLaDA2MoeModel adds diffusion.shift_logits = false; bailingmoe2 has no diffusion key.
      w.add_u32(a + "rope.dimension_count", s.n_rot);
      w.add_string(a + "rope.scaling.type", "none");
      w.add_u32(a + "leading_dense_block_count", s.n_layer_dense_lead);
      w.add_u32(a + "vocab_size", s.n_vocab);
      w.add_u32(a + "expert_group_count", s.n_expert_group);
      w.add_u32(a + "expert_group_used_count", s.n_expert_group_used);
      w.add_u32(a + "expert_shared_feed_forward_length", s.n_ff_shexp);
      w.add_u32(a + "expert_shared_count", s.n_expert_shared);
      w.add_f32(a + "expert_weights_scale", s.expert_weights_scale);
      w.add_bool(a + "expert_weights_norm", s.expert_weights_norm);
      w.add_u32(a + "expert_gating_func", s.expert_gating_func);
      if (s.arch == "llada2") w.add_bool("diffusion.shift_logits", false);
    }
    // Ling 2.0 (llada2, bailingmoe2) has LLaDA-MoE's tokenizer.
    const Vocab v = llada                  ? make_vocab(126080, s.n_vocab, llada_specials())
                    : llada_moe || s.ling2 ? make_vocab(156891, s.n_vocab, llada_moe_specials())
                    : rnd1                 ? make_vocab(151643, s.n_vocab, rnd1_specials())
                                           : make_vocab(151643, s.n_vocab, dream_specials());
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", s.tokenizer_pre);
    w.add_string_array("tokenizer.ggml.tokens", v.tokens);
    w.add_i32_array("tokenizer.ggml.token_type", v.types);
    w.add_string_array("tokenizer.ggml.merges", v.merges);
    if (llada) {
      w.add_u32("tokenizer.ggml.bos_token_id", 126080);
      w.add_u32("tokenizer.ggml.eos_token_id", 126081);
      w.add_u32("tokenizer.ggml.padding_token_id", 126081);
      w.add_u32("tokenizer.ggml.mask_token_id", 126336);
      w.add_u32("tokenizer.ggml.eot_token_id", 126348);
      w.add_bool("tokenizer.ggml.add_bos_token", true);
      w.add_bool("tokenizer.ggml.add_eos_token", false);
      w.add_string("tokenizer.chat_template", kLladaTemplate);
    } else if (llada_moe || s.ling2) {
      w.add_u32("tokenizer.ggml.bos_token_id", 156891);
      w.add_u32("tokenizer.ggml.eos_token_id", 156892);
      w.add_u32("tokenizer.ggml.padding_token_id", 156892);
      w.add_u32("tokenizer.ggml.mask_token_id", 156895);
      w.add_bool("tokenizer.ggml.add_bos_token", false);
      w.add_string("tokenizer.chat_template", kLladaMoeTemplate);
    } else if (rnd1) {
      // A base model: no chat template.
      w.add_u32("tokenizer.ggml.bos_token_id", 151643);
      w.add_u32("tokenizer.ggml.eos_token_id", 151645);
      w.add_u32("tokenizer.ggml.padding_token_id", 151643);
      w.add_u32("tokenizer.ggml.mask_token_id", 151669);
      w.add_bool("tokenizer.ggml.add_bos_token", false);
    } else {
      w.add_u32("tokenizer.ggml.bos_token_id", 151643);
      w.add_u32("tokenizer.ggml.eos_token_id", 151643);
      w.add_u32("tokenizer.ggml.padding_token_id", 151643);
      w.add_u32("tokenizer.ggml.mask_token_id", 151666);
      w.add_bool("tokenizer.ggml.add_bos_token", false);
      w.add_string("tokenizer.chat_template", kDreamTemplate);
    }
  }
  w.add_u32("general.quantization_version", 2);
  w.add_u32("general.file_type", 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M

  for (const TensorPlan& t : tensor_plan(s)) {
    const uint64_t key = splitmix64(seed ^ hash_name(t.name));
    if (t.type == GgmlType::F32) {
      size_t n = 1;
      for (const int64_t d : t.ne) n *= static_cast<size_t>(d);
      std::vector<float> data(n, 1.0f);   // norm weights, ffn_down_exps.scale, the output scalars
      if (t.name == "rope_freqs.weight")  // a quarter of the pairs rotated (the converter's 1.0 / 1e30)
        for (size_t k = 0; k < n; ++k) data[k] = k < n / 4 ? 1.0f : 1e30f;
      if (t.name.find(".bias") != std::string::npos) {
        WyRand r{key};
        for (float& x : data) x = static_cast<float>(0.04 * r.unit() - 0.02);
      } else if (t.name.find("ffn_gate_inp") != std::string::npos) {
        // Router rows uniform in [-0.05, 0.05]: logits of spread ~1.3 on unit-RMS inputs of 2048, so
        // the rows spread over the experts as a trained router's do.
        WyRand r{key};
        for (float& x : data) x = static_cast<float>(0.1 * r.unit() - 0.05);
      }
      w.add_tensor(t.name, t.type, t.ne, data.data(), data.size() * sizeof(float));
    } else {
      w.add_tensor(t.name, t.type, t.ne, block_fill(t.type, key));
    }
  }
  w.write(path);
}

}  // namespace dllm::synth
