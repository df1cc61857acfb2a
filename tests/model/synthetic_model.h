// Tiny synthetic LLaDA / Dream / LLaDA-MoE / RND1 GGUF files written with GgufWriter, for the model and
// forward tests:
// random weights of a chosen type mix, plus knobs that break one thing (a missing key or tensor, a
// wrong shape or type) for the error tests. Returns the decoded value of every tensor so a test can
// run its own f64 reference forward over exactly what the file holds.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "f16_bits.h"
#include "gguf/writer.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace dllm::test {

enum class WeightMix {
  kF32,       ///< every tensor F32
  kFloatMix,  ///< matrices F32 / F16 / BF16 mixed, norms F32
  kQ4KM,      ///< llama-quantize's Q4_K_M mix: Q4_K, with output and some attn_v / ffn_down Q6_K
};

struct SyntheticSpec {
  std::string arch = "llada";  ///< "llada", "dream", or the mixture-of-experts "llada-moe", "rnd1"
  int64_t n_layer = 2, n_embd = 256, n_ff = 512, n_head = 4, n_head_kv = 4, n_vocab = 97;
  /// llada-moe / rnd1: experts per layer, experts used per row, expert FFN width (the keys
  /// {arch}.expert_count, expert_used_count, expert_feed_forward_length).
  int64_t n_expert = 8, n_expert_used = 2, n_ff_exp = 256;
  /// Writes {arch}.attention.key_length / value_length (RND1 has n_head * head_dim != n_embd); nullopt:
  /// head_dim = n_embd / n_head, no key.
  std::optional<int64_t> head_dim;
  /// Writes {arch}.rope.dimension_count: RoPE rotates the first n_rot dims of each head (partial
  /// RoPE); nullopt: no key (every dim).
  std::optional<int64_t> n_rot;
  double expert_std = 0.1;  ///< spread of the expert weights (larger: the FFN dominates the output)
  double router_std = 0.3;  ///< spread of the router weights (larger: sharper routing)
  int64_t context_length = 4096;
  float rope_base = 10000.0f, rms_eps = 1e-5f;
  WeightMix mix = WeightMix::kF32;
  bool write_head_count_kv = true;
  std::optional<bool> shift_logits;  ///< diffusion.shift_logits, absent when nullopt
  std::optional<bool> biases;        ///< q/k/v biases; default: arch == "dream"
  bool tied_output = false;          ///< no output.weight (the LM head reuses token_embd)
  uint32_t seed = 1;
  // Mutations for the error tests.
  std::set<std::string> omit_keys, omit_tensors;
  std::map<std::string, std::vector<int64_t>> shape_override;  ///< ne to write instead
  std::map<std::string, gguf::GgmlType> type_override;  ///< type to write (random bytes unless decodable)
  std::map<std::string, gguf::Value> extra_values;      ///< written after the standard keys
};

/// Whether `arch` is one of the mixture-of-experts architectures.
inline bool synthetic_is_moe(const std::string& arch) {
  return arch == "llada-moe" || arch == "rnd1";
}

/// Every tensor's values as a reader decodes them (row-major, ne[0] contiguous; a 3-D expert tensor
/// [n_in, n_out, E] is E blocks of n_out rows) and its type.
struct SyntheticModel {
  SyntheticSpec spec;
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, gguf::GgmlType> types;
  const std::vector<double>& operator[](const std::string& name) const { return values.at(name); }
};

namespace synthetic_detail {

using test::f16_bits_to_f32;
using test::f32_to_f16_bits;

/// Random but well-formed bytes for `type`: normal values for the float types; for Q4_K / Q6_K random
/// quants and 6-bit scales under small f16 super-block scales chosen so that weights have a spread of
/// about `stddev` and a mean near zero; uniform random bytes for anything else.
inline std::vector<uint8_t> random_tensor(gguf::GgmlType type, int64_t n, double stddev, std::mt19937& rng) {
  using gguf::GgmlType;
  std::normal_distribution<float> normal(0.0f, static_cast<float>(stddev));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> out(gguf::GgufWriter::tensor_bytes(type, {n}));
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t b = f32_to_f16_bits(normal(rng));
        std::memcpy(out.data() + 2 * i, &b, 2);
      }
      break;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const float v = normal(rng);
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t b = static_cast<uint16_t>(u >> 16);  // truncation: an exact bf16 value
        std::memcpy(out.data() + 2 * i, &b, 2);
      }
      break;
    case GgmlType::Q4_K: {
      // x = d * sc * q - dmin * m with q ~ U[0, 15], sc ~ U[16, 63] and m = sc, dmin = 7.5 d: every
      // sub-block is centred (like a quantized Gaussian row), std ~ d * sc * 4.6. The 6-bit sc/m pack
      // into 12 bytes as ggml's get_scale_min_k4 unpacks them.
      auto* b = reinterpret_cast<quant::block_q4_K*>(out.data());
      const float d = static_cast<float>(stddev / 180.0);
      std::uniform_int_distribution<int> scale(16, 63);
      for (int64_t i = 0; i < n / quant::kQK_K; ++i) {
        b[i].d = f32_to_f16_bits(d);
        b[i].dmin = f32_to_f16_bits(7.5f * d);
        int sc[8], m[8];
        for (int j = 0; j < 8; ++j) sc[j] = m[j] = scale(rng);
        for (int j = 0; j < 4; ++j) {
          b[i].scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
          b[i].scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
          b[i].scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
        }
        for (auto& q : b[i].qs) q = static_cast<uint8_t>(byte(rng));
      }
      break;
    }
    case GgmlType::Q5_K: {
      // As Q4_K with q ~ U[0, 31] (4 bits in qs, the fifth in qh) and dmin = 15.5 d: centred sub-blocks,
      // std ~ d * sc * 9.2.
      auto* b = reinterpret_cast<quant::block_q5_K*>(out.data());
      const float d = static_cast<float>(stddev / 370.0);
      std::uniform_int_distribution<int> scale(16, 63);
      for (int64_t i = 0; i < n / quant::kQK_K; ++i) {
        b[i].d = f32_to_f16_bits(d);
        b[i].dmin = f32_to_f16_bits(15.5f * d);
        int sc[8];
        for (int j = 0; j < 8; ++j) sc[j] = scale(rng);
        for (int j = 0; j < 4; ++j) {  // m = sc
          b[i].scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
          b[i].scales[j + 4] = b[i].scales[j];
          b[i].scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((sc[j + 4] & 15) << 4));
        }
        for (auto& q : b[i].qh) q = static_cast<uint8_t>(byte(rng));
        for (auto& q : b[i].qs) q = static_cast<uint8_t>(byte(rng));
      }
      break;
    }
    case GgmlType::Q8_0: {
      // x = d * q, q ~ U[-127, 127] (what llama-quantize writes): std ~ d * 73.
      auto* b = reinterpret_cast<quant::block_q8_0*>(out.data());
      std::uniform_int_distribution<int> q(-127, 127);
      for (int64_t i = 0; i < n / quant::kQK8_0; ++i) {
        b[i].d = f32_to_f16_bits(static_cast<float>(stddev / 73.0));
        for (auto& v : b[i].qs) v = static_cast<int8_t>(q(rng));
      }
      break;
    }
    case GgmlType::Q6_K: {
      // x = d * sc * (q - 32), sc ~ U[-16, 16], q ~ U[0, 63]: std ~ d * 9.5 * 18.5.
      auto* b = reinterpret_cast<quant::block_q6_K*>(out.data());
      std::uniform_int_distribution<int> sc(-16, 16);
      for (int64_t i = 0; i < n / quant::kQK_K; ++i) {
        for (auto& q : b[i].ql) q = static_cast<uint8_t>(byte(rng));
        for (auto& q : b[i].qh) q = static_cast<uint8_t>(byte(rng));
        for (auto& s : b[i].scales) s = static_cast<int8_t>(sc(rng));
        b[i].d = f32_to_f16_bits(static_cast<float>(stddev / 175.0));
      }
      break;
    }
    default:
      for (auto& x : out) x = static_cast<uint8_t>(byte(rng));
  }
  return out;
}

}  // namespace synthetic_detail

/// Writes the model to `path` and returns the decoded values of its tensors (those of a decodable
/// type; the others are left out of `values`).
inline SyntheticModel write_synthetic_model(const SyntheticSpec& spec, const std::string& path) {
  using gguf::GgmlType;
  SyntheticModel model;
  model.spec = spec;
  gguf::GgufWriter w;
  const std::string a = spec.arch + ".";
  auto key = [&](const std::string& k) { return !spec.omit_keys.count(k); };
  if (key("general.architecture")) w.add_string("general.architecture", spec.arch);
  w.add_string("general.name", "synthetic-" + spec.arch);
  if (key(a + "block_count")) w.add_u32(a + "block_count", static_cast<uint32_t>(spec.n_layer));
  if (key(a + "context_length")) w.add_u32(a + "context_length", static_cast<uint32_t>(spec.context_length));
  if (key(a + "embedding_length")) w.add_u32(a + "embedding_length", static_cast<uint32_t>(spec.n_embd));
  if (key(a + "feed_forward_length")) w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(spec.n_ff));
  if (key(a + "attention.head_count"))
    w.add_u32(a + "attention.head_count", static_cast<uint32_t>(spec.n_head));
  if (spec.write_head_count_kv && key(a + "attention.head_count_kv")) {
    w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(spec.n_head_kv));
  }
  if (key(a + "rope.freq_base")) w.add_f32(a + "rope.freq_base", spec.rope_base);
  if (key(a + "attention.layer_norm_rms_epsilon"))
    w.add_f32(a + "attention.layer_norm_rms_epsilon", spec.rms_eps);
  w.add_bool(a + "attention.causal", false);
  if (spec.shift_logits) w.add_bool("diffusion.shift_logits", *spec.shift_logits);
  const bool moe = synthetic_is_moe(spec.arch);
  if (moe) {
    if (key(a + "expert_count")) w.add_u32(a + "expert_count", static_cast<uint32_t>(spec.n_expert));
    if (key(a + "expert_used_count"))
      w.add_u32(a + "expert_used_count", static_cast<uint32_t>(spec.n_expert_used));
    if (key(a + "expert_feed_forward_length"))
      w.add_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(spec.n_ff_exp));
  }
  if (spec.n_rot) w.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(*spec.n_rot));
  if (spec.head_dim) {
    w.add_u32(a + "attention.key_length", static_cast<uint32_t>(*spec.head_dim));
    w.add_u32(a + "attention.value_length", static_cast<uint32_t>(*spec.head_dim));
  }
  for (const auto& [k, v] : spec.extra_values) w.add_value(k, v);

  const bool biases = spec.biases.value_or(spec.arch == "dream");
  const int64_t hd = spec.head_dim.value_or(spec.n_embd / spec.n_head);
  const int64_t n_q = spec.n_head * hd, n_kv = spec.n_head_kv * hd;
  std::mt19937 rng(spec.seed);

  // Type of a 2-D weight under the mix; `layer` -1 for the global tensors.
  auto matrix_type = [&](const std::string& stem, int64_t layer) {
    switch (spec.mix) {
      case WeightMix::kF32:
        return GgmlType::F32;
      case WeightMix::kFloatMix:
        if (stem == "ffn_gate" || stem == "attn_v") return GgmlType::F16;
        if (stem == "ffn_up" || stem == "output") return GgmlType::BF16;
        return GgmlType::F32;
      case WeightMix::kQ4KM: {
        if (stem == "output") return GgmlType::Q6_K;
        // llama-quantize's rules for a model of exactly 8 experts (src/llama-quant.cpp, n_expert == 8:
        // "bumping this to Q8_0 trades just ~128MB"): Q8_0 attn_k / attn_v, Q5_K attn_output.
        if (moe && spec.n_expert == 8 && (stem == "attn_k" || stem == "attn_v")) return GgmlType::Q8_0;
        if (moe && spec.n_expert == 8 && stem == "attn_output") return GgmlType::Q5_K;
        // llama-quantize's use_more_bits(i, n) for attn_v / ffn_down.
        const int64_t n = spec.n_layer, i = layer;
        const bool more = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
        if ((stem == "attn_v" || stem == "ffn_down") && more) return GgmlType::Q6_K;
        return GgmlType::Q4_K;
      }
    }
    return GgmlType::F32;
  };

  auto add = [&](const std::string& name, GgmlType type, std::vector<int64_t> ne, double stddev,
                 bool ones = false) {
    if (spec.omit_tensors.count(name)) return;
    if (auto it = spec.type_override.find(name); it != spec.type_override.end()) type = it->second;
    if (auto it = spec.shape_override.find(name); it != spec.shape_override.end()) ne = it->second;
    int64_t n = 1;
    for (const int64_t x : ne) n *= x;
    std::vector<uint8_t> bytes = synthetic_detail::random_tensor(type, n, stddev, rng);
    if (ones && type == GgmlType::F32) {
      // RMSNorm weights: near 1 (not exactly, so that a missing multiply shows).
      std::uniform_real_distribution<float> u(0.8f, 1.2f);
      for (int64_t i = 0; i < n; ++i) {
        const float v = u(rng);
        std::memcpy(bytes.data() + 4 * i, &v, 4);
      }
    }
    w.add_tensor(name, type, ne, bytes.data(), bytes.size());
    model.types[name] = type;
    if (quant::can_dequantize(type)) {
      std::vector<float> f(n);
      quant::dequantize_row(type, bytes.data(), f.data(), n);
      model.values[name] = std::vector<double>(f.begin(), f.end());
    }
  };

  // Tied embeddings: llama-quantize gives token_embd the output tensor's type (Q6_K in Q4_K_M).
  add("token_embd.weight",
      spec.mix == WeightMix::kQ4KM ? (spec.tied_output ? GgmlType::Q6_K : GgmlType::Q4_K) : GgmlType::F32,
      {spec.n_embd, spec.n_vocab}, 1.0);
  add("output_norm.weight", GgmlType::F32, {spec.n_embd}, 1.0, true);
  if (!spec.tied_output) add("output.weight", matrix_type("output", -1), {spec.n_embd, spec.n_vocab}, 0.1);
  for (int64_t i = 0; i < spec.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    add(p + "attn_norm.weight", GgmlType::F32, {spec.n_embd}, 1.0, true);
    add(p + "attn_q.weight", matrix_type("attn_q", i), {spec.n_embd, n_q}, 0.05);
    add(p + "attn_k.weight", matrix_type("attn_k", i), {spec.n_embd, n_kv}, 0.05);
    add(p + "attn_v.weight", matrix_type("attn_v", i), {spec.n_embd, n_kv}, 0.1);
    if (biases) {
      add(p + "attn_q.bias", GgmlType::F32, {n_q}, 0.3);
      add(p + "attn_k.bias", GgmlType::F32, {n_kv}, 0.3);
      add(p + "attn_v.bias", GgmlType::F32, {n_kv}, 0.1);
    }
    if (moe) {
      add(p + "attn_q_norm.weight", GgmlType::F32, {hd}, 1.0, true);
      add(p + "attn_k_norm.weight", GgmlType::F32, {hd}, 1.0, true);
    }
    add(p + "attn_output.weight", matrix_type("attn_output", i), {n_q, spec.n_embd}, 0.1);
    add(p + "ffn_norm.weight", GgmlType::F32, {spec.n_embd}, 1.0, true);
    if (moe) {
      // The router stays F32 in every llama-quantize mix; the 3-D experts are matrices of the mix.
      const int64_t E = spec.n_expert, f = spec.n_ff_exp;
      add(p + "ffn_gate_inp.weight", GgmlType::F32, {spec.n_embd, E}, spec.router_std);
      add(p + "ffn_gate_exps.weight", matrix_type("ffn_gate", i), {spec.n_embd, f, E}, spec.expert_std);
      add(p + "ffn_up_exps.weight", matrix_type("ffn_up", i), {spec.n_embd, f, E}, spec.expert_std);
      add(p + "ffn_down_exps.weight", matrix_type("ffn_down", i), {f, spec.n_embd, E}, spec.expert_std);
    } else {
      add(p + "ffn_gate.weight", matrix_type("ffn_gate", i), {spec.n_embd, spec.n_ff}, 0.1);
      add(p + "ffn_up.weight", matrix_type("ffn_up", i), {spec.n_embd, spec.n_ff}, 0.1);
      add(p + "ffn_down.weight", matrix_type("ffn_down", i), {spec.n_ff, spec.n_embd}, 0.1);
    }
  }
  w.write(path);
  return model;
}

}  // namespace dllm::test
