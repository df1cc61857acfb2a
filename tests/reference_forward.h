// Oracles shared by the CPU and GPU forward tests (tests/cpu, tests/cuda); header-only, test code only.
//
// 1. ReferenceForward: an f64 forward pass over the values of a synthetic model
//    (tests/model/synthetic_model.h), written from the formulas of the two architectures (issue 2,
//    item 4), not from our ops:
//      x = E[tok]; per layer: h = x / sqrt(mean(x^2) + eps) * g; q = Wq h (+bq), k, v likewise;
//      rotate q, k per head: pair i (LLaDA (2i, 2i+1), Dream (i, i + hd/2)) by pos * base^(-2i/hd);
//      a_h = softmax(q_h K_{h/(n_head/n_kv)}^T / sqrt(hd)) V_{h/(n_head/n_kv)}, no mask; x += Wo a;
//      h = rmsnorm(x) * g2; x += Wdown (silu(Wgate h) * (Wup h)); logits = Wout rmsnorm(x) * gout.
//    LLaDA-MoE / RND1 (llama.cpp src/models/llada-moe.cpp, rnd1.cpp, build_moe_ffn): q and k of each
//    head are RMSNormed over head_dim (weights attn_q_norm / attn_k_norm) before the rotation, and the
//    FFN is routed: p = softmax(Wr h); S = the k largest p (ties: lower index); w_e = p_e, or
//    p_e / max(sum_S p, 2^-14) for RND1; x += sum_{e in S} w_e Wdown_e (silu(Wgate_e h) * (Wup_e h)).
//    It rounds each matrix input the way the path under test does (flags below): to Q8_K before a
//    Q4_K / Q5_K / Q6_K matrix and to Q8_0 before a Q8_0 matrix (what ggml-cpu and our CPU forward
//    do; the GPU int8 path for Q4_K / Q6_K too), to f16 where the GPU reads f16.
// 2. The llama.cpp logits in ../shared/reference/logits (ref_logits, CPU, flash attention off; float16
//    [n_tokens][n_vocab], token ids int32): loading, per-row figures, and issue 2's bounds.
#pragma once

#include <gtest/gtest.h>

#include "f16_bits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/synthetic_model.h"
#include "quant/quant.h"
#include "test_util.h"

namespace dllm::test {

// ---------------------------------------------------------------------------------------------
// 1. The f64 reference forward pass.

/// Q8_K round trip of one row (n a multiple of 256), in f32 arithmetic as the format defines it
/// (ggml quantize_row_q8_K_ref): per block of 256, d = max / -127 with max the signed value of
/// largest magnitude, q = round-half-even(x * (-127 / max)) clamped to 127, value q * d.
inline std::vector<double> q8k_round_trip(const std::vector<double>& x) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t b = 0; b < x.size(); b += 256) {
    float max = 0, amax = 0;
    for (size_t j = 0; j < 256; ++j) {
      const float v = static_cast<float>(x[b + j]);
      if (std::fabs(v) > amax) {
        amax = std::fabs(v);
        max = v;
      }
    }
    if (amax == 0) continue;
    const float iscale = -127.0f / max;
    const float d = 1.0f / iscale;
    for (size_t j = 0; j < 256; ++j) {
      const float s = iscale * static_cast<float>(x[b + j]);
      const double q = std::min(127.0, static_cast<double>(std::nearbyint(s)));  // default mode: half-even
      y[b + j] = q * d;
    }
  }
  return y;
}

/// Q8_0 round trip of one row (n a multiple of 32), as ggml-cpu's x86 quantize_row_q8_0 defines it:
/// per block of 32, amax = max |x|, d = f16(amax / 127), q = round-half-even(x * (127 / amax)) (f32
/// arithmetic), value q * d.
inline std::vector<double> q80_round_trip(const std::vector<double>& x) {
  std::vector<double> y(x.size(), 0.0);
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(static_cast<float>(x[b + j])));
    if (amax == 0) continue;
    const double d = static_cast<double>(test::round_f16(amax / 127.0f));
    const float id = 127.0f / amax;
    for (size_t j = 0; j < 32; ++j) y[b + j] = std::nearbyint(static_cast<float>(x[b + j]) * id) * d;
  }
  return y;
}

/// v rounded to the nearest IEEE binary16 value (through f32, round to nearest even).
inline double round_to_f16(double v) {
  return static_cast<double>(test::round_f16(static_cast<float>(v)));
}

/// The f64 forward pass described at the top of this file, over the decoded values of `m`.
/// Copyable, so a test can flip one convention (neox, q8k_inputs) and show the comparison fails.
struct ReferenceForward {
  using Vec = std::vector<double>;

  const SyntheticModel& m;
  bool neox = false;        ///< RoPE pairs (i, i + hd/2) (Dream, NEOX) instead of (2i, 2i+1) (LLaDA)
  bool q8k_inputs = true;   ///< the input of a quantized matrix is rounded first (Q8_K; Q8_0 for Q8_0)
  bool f16_floats = false;  ///< F32 / F16 / BF16 matrices: weights and input rounded to f16 (GPU)
  bool f16_quants = false;  ///< Q4_K / Q6_K too, after the Q8_K rounding (GPU cuBLAS path: f16 scratch)

  /// y = W x for W stored [n_in, n_out] (n_out rows of n_in contiguous values), inputs rounded as the
  /// flags say.
  Vec matvec(const std::string& name, const Vec& x) const {
    return matvec_rows(name, 0, static_cast<int64_t>(m[name].size() / x.size()), x);
  }

  /// matvec over rows [row0, row0 + n_rows) of W (of a 3-D expert tensor [n_in, n_out, E], expert e
  /// is rows [e n_out, (e + 1) n_out)).
  Vec matvec_rows(const std::string& name, int64_t row0, int64_t n_rows, const Vec& x) const {
    const Vec& w = m[name];
    const auto type = m.types.at(name);
    using gguf::GgmlType;
    const bool q80 = type == GgmlType::Q8_0;
    const bool quantized = type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K || q80;
    const bool f16 = quantized ? f16_quants : f16_floats;
    Vec xin = quantized && q8k_inputs ? (q80 ? q80_round_trip(x) : q8k_round_trip(x)) : x;
    if (f16)
      for (double& v : xin) v = round_to_f16(v);
    const size_t n_in = x.size(), n_out = static_cast<size_t>(n_rows);
    Vec y(n_out, 0.0);
    for (size_t o = 0; o < n_out; ++o) {
      const double* wr = w.data() + (static_cast<size_t>(row0) + o) * n_in;
      double s = 0;
      for (size_t i = 0; i < n_in; ++i) s += (f16 ? round_to_f16(wr[i]) : wr[i]) * xin[i];
      y[o] = s;
    }
    return y;
  }

  /// One row through a MoE FFN block (the routed sum above), f64, for the normalized input h of layer
  /// `layer`. `experts` / `weights` / `probs` receive the routing (k slots, E probabilities).
  struct MoeRow {
    std::vector<int> experts;
    std::vector<double> weights, probs;
    Vec out;
  };
  MoeRow moe_ffn(int64_t layer, const Vec& h) const {
    const SyntheticSpec& s = m.spec;
    const std::string p = "blk." + std::to_string(layer) + ".";
    const int64_t E = s.n_expert, k = s.n_expert_used, f = s.n_ff_exp, d = s.n_embd;
    MoeRow r;
    const Vec& router = m[p + "ffn_gate_inp.weight"];
    r.probs.assign(E, 0.0);
    double mx = -1e300, sum = 0;
    for (int64_t e = 0; e < E; ++e) {
      for (int64_t i = 0; i < d; ++i) r.probs[e] += router[e * d + i] * h[i];
      mx = std::max(mx, r.probs[e]);
    }
    for (double& v : r.probs) sum += (v = std::exp(v - mx));
    for (double& v : r.probs) v /= sum;
    std::vector<bool> taken(E, false);
    for (int64_t j = 0; j < k; ++j) {
      int best = -1;
      for (int64_t e = 0; e < E; ++e)
        if (!taken[e] && (best < 0 || r.probs[e] > r.probs[best])) best = static_cast<int>(e);
      taken[best] = true;
      r.experts.push_back(best);
      r.weights.push_back(r.probs[best]);
    }
    if (s.arch == "rnd1") {
      double sw = 0;
      for (const double w : r.weights) sw += w;
      for (double& w : r.weights) w /= std::max(sw, 6.103515625e-5);
    }
    r.out.assign(d, 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = r.experts[j];
      const Vec g = matvec_rows(p + "ffn_gate_exps.weight", e * f, f, h);
      const Vec u = matvec_rows(p + "ffn_up_exps.weight", e * f, f, h);
      Vec act(f);
      for (int64_t i = 0; i < f; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const Vec dn = matvec_rows(p + "ffn_down_exps.weight", e * d, d, act);
      for (int64_t i = 0; i < d; ++i) r.out[i] += r.weights[j] * dn[i];
    }
    return r;
  }

  /// RMSNorm of each head_dim slice of v (n_heads of them) with the weight vector `weight`.
  void head_norm(Vec& v, int64_t n_heads, int64_t hd, const std::string& weight) const {
    const Vec& g = m[weight];
    for (int64_t h = 0; h < n_heads; ++h) {
      double ss = 0;
      for (int64_t i = 0; i < hd; ++i) ss += v[h * hd + i] * v[h * hd + i];
      const double inv = 1.0 / std::sqrt(ss / hd + m.spec.rms_eps);
      for (int64_t i = 0; i < hd; ++i) v[h * hd + i] *= inv * g[i];
    }
  }

  Vec rmsnorm(const Vec& x, const std::string& weight) const {
    const Vec& g = m[weight];
    double ss = 0;
    for (const double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + m.spec.rms_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * g[i];
    return y;
  }

  /// RoPE of the first nr = rope.dimension_count (else hd) dims of each head; the rest unchanged.
  void rotate(Vec& v, int64_t n_heads, int64_t hd, int64_t pos) const {
    const int64_t nr = m.spec.n_rot.value_or(hd);
    for (int64_t h = 0; h < n_heads; ++h) {
      for (int64_t i = 0; i < nr / 2; ++i) {
        const int64_t a = h * hd + (neox ? i : 2 * i), b = h * hd + (neox ? i + nr / 2 : 2 * i + 1);
        const double theta = pos * std::pow(double(m.spec.rope_base), -2.0 * i / nr);
        const double x0 = v[a], x1 = v[b];
        v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
      }
    }
  }

  /// logits [n][n_vocab] for every position.
  std::vector<Vec> forward(const std::vector<int32_t>& tokens) const {
    const SyntheticSpec& s = m.spec;
    const int64_t n = tokens.size(), d = s.n_embd, hd = s.head_dim.value_or(s.n_embd / s.n_head);
    const bool bias = s.biases.value_or(s.arch == "dream");
    const bool moe = synthetic_is_moe(s.arch);
    std::vector<Vec> x(n);
    const Vec& emb = m["token_embd.weight"];
    for (int64_t t = 0; t < n; ++t)
      x[t].assign(emb.begin() + tokens[t] * d, emb.begin() + (tokens[t] + 1) * d);
    for (int64_t l = 0; l < s.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      std::vector<Vec> q(n), k(n), v(n);
      for (int64_t t = 0; t < n; ++t) {
        const Vec h = rmsnorm(x[t], p + "attn_norm.weight");
        q[t] = matvec(p + "attn_q.weight", h);
        k[t] = matvec(p + "attn_k.weight", h);
        v[t] = matvec(p + "attn_v.weight", h);
        if (bias) {
          for (size_t i = 0; i < q[t].size(); ++i) q[t][i] += m[p + "attn_q.bias"][i];
          for (size_t i = 0; i < k[t].size(); ++i) k[t][i] += m[p + "attn_k.bias"][i];
          for (size_t i = 0; i < v[t].size(); ++i) v[t][i] += m[p + "attn_v.bias"][i];
        }
        if (moe) {
          head_norm(q[t], s.n_head, hd, p + "attn_q_norm.weight");
          head_norm(k[t], s.n_head_kv, hd, p + "attn_k_norm.weight");
        }
        rotate(q[t], s.n_head, hd, t);
        rotate(k[t], s.n_head_kv, hd, t);
      }
      for (int64_t t = 0; t < n; ++t) {
        Vec a(s.n_head * hd, 0.0);
        for (int64_t h = 0; h < s.n_head; ++h) {
          const int64_t g = h / (s.n_head / s.n_head_kv);
          Vec e(n);
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t i = 0; i < hd; ++i) dot += q[t][h * hd + i] * k[j][g * hd + i];
            e[j] = dot / std::sqrt(double(hd));
            mx = std::max(mx, e[j]);
          }
          for (double& z : e) sum += (z = std::exp(z - mx));
          for (int64_t j = 0; j < n; ++j) {
            for (int64_t i = 0; i < hd; ++i) a[h * hd + i] += e[j] / sum * v[j][g * hd + i];
          }
        }
        const Vec o = matvec(p + "attn_output.weight", a);
        for (int64_t i = 0; i < d; ++i) x[t][i] += o[i];
      }
      for (int64_t t = 0; t < n; ++t) {
        const Vec h = rmsnorm(x[t], p + "ffn_norm.weight");
        if (moe) {
          const Vec o = moe_ffn(l, h).out;
          for (int64_t i = 0; i < d; ++i) x[t][i] += o[i];
          continue;
        }
        const Vec g = matvec(p + "ffn_gate.weight", h), u = matvec(p + "ffn_up.weight", h);
        Vec act(g.size());
        for (size_t i = 0; i < g.size(); ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const Vec down = matvec(p + "ffn_down.weight", act);
        for (int64_t i = 0; i < d; ++i) x[t][i] += down[i];
      }
    }
    std::vector<Vec> logits(n);
    const std::string head = s.tied_output ? "token_embd.weight" : "output.weight";
    for (int64_t t = 0; t < n; ++t) logits[t] = matvec(head, rmsnorm(x[t], "output_norm.weight"));
    return logits;
  }
};

/// A GGUF file (e.g. llama.cpp's tiny reference models) as a SyntheticModel: the hyperparameters the
/// reference forward reads, taken from the file's keys as llama.cpp names them ({arch}.block_count,
/// embedding_length, attention.head_count(_kv), attention.key_length, rope.freq_base,
/// attention.layer_norm_rms_epsilon, expert_count, expert_used_count, expert_feed_forward_length),
/// and every tensor decoded with quant::dequantize_row, so ReferenceForward runs on it.
inline SyntheticModel model_values(const gguf::GgufFile& f) {
  SyntheticModel m;
  SyntheticSpec& s = m.spec;
  s.arch = f.get_string("general.architecture");
  const std::string a = s.arch + ".";
  s.n_layer = f.get_u64(a + "block_count");
  s.n_embd = f.get_u64(a + "embedding_length");
  s.n_head = f.get_u64(a + "attention.head_count");
  s.n_head_kv = f.find_u64(a + "attention.head_count_kv").value_or(s.n_head);
  if (const auto hd = f.find_u64(a + "attention.key_length")) s.head_dim = static_cast<int64_t>(*hd);
  s.rope_base = f.find_f32(a + "rope.freq_base").value_or(10000.0f);
  s.rms_eps = f.get_f32(a + "attention.layer_norm_rms_epsilon");
  if (synthetic_is_moe(s.arch)) {
    s.n_expert = f.get_u64(a + "expert_count");
    s.n_expert_used = f.get_u64(a + "expert_used_count");
    s.n_ff_exp = f.get_u64(a + "expert_feed_forward_length");
  }
  s.tied_output = f.find_tensor("output.weight") == nullptr;
  s.biases = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  s.n_vocab = f.find_tensor("token_embd.weight")->ne[1];
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    quant::dequantize_row(t.type, f.tensor_data(t), v.data(), t.n_elements());
    m.values[t.name] = std::vector<double>(v.begin(), v.end());
    m.types[t.name] = t.type;
  }
  return m;
}

/// Largest per-row relative RMS difference ||ours - ref|| / ||ref||: row j of `ours` (n_vocab
/// contiguous floats) against ref[rows[j]].
inline double max_rel_rms(const std::vector<float>& ours, const std::vector<std::vector<double>>& ref,
                          const std::vector<int32_t>& rows) {
  double worst = 0;
  const size_t v = ref[0].size();
  for (size_t j = 0; j < rows.size(); ++j) {
    double diff = 0, norm = 0;
    for (size_t i = 0; i < v; ++i) {
      const double r = ref[rows[j]][i];
      diff += (ours[j * v + i] - r) * (ours[j * v + i] - r);
      norm += r * r;
    }
    worst = std::max(worst, std::sqrt(diff / norm));
  }
  return worst;
}

/// The same over every row of `ref`, in order (`ours` holds ref.size() rows).
inline double max_rel_rms(const std::vector<float>& ours, const std::vector<std::vector<double>>& ref) {
  std::vector<int32_t> rows(ref.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
  return max_rel_rms(ours, ref, rows);
}

/// n token ids uniform in [0, n_vocab), from mt19937(seed).
inline std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(n);
  for (auto& x : t) x = dist(rng);
  return t;
}

// ---------------------------------------------------------------------------------------------
// 2. llama.cpp's logits for the tiny reference models (../shared/reference/logits).

/// Issue 2's acceptance bounds for our logits against llama.cpp's, per sequence: relative RMS error
/// per row <= 0.05, median row <= 0.03, same argmax on >= 90% of rows (llama.cpp vs an exact f64
/// forward is 2.6% median / 3.3% max; convention errors give ~85%).
constexpr double kRefMaxRowRelRms = 0.05;
constexpr double kRefMedianRowRelRms = 0.03;
constexpr double kRefMinArgmaxAgreement = 0.9;

/// ../shared/reference/tiny-<arch>-q4km.gguf.
inline std::filesystem::path reference_model(const std::string& arch) {
  return reference("tiny-" + arch + "-q4km.gguf");
}

/// One sequence: tokens-tiny-<arch>-<key>.i32 and, when loaded, logits-tiny-<arch>-<key>.f16.
struct ReferenceSequence {
  std::string arch, key;
  std::vector<int32_t> tokens;
  int64_t n_vocab = 0;
  std::vector<float> logits;  ///< n_tokens x n_vocab (n_vocab contiguous)
};

/// The token ids of a sequence (int32 little-endian).
inline std::vector<int32_t> load_reference_tokens(const std::string& arch, const std::string& key) {
  const auto bytes = read_file(reference("logits/tokens-tiny-" + arch + "-" + key + ".i32"));
  EXPECT_EQ(bytes.size() % 4, 0u) << key;
  std::vector<int32_t> tokens(bytes.size() / 4);
  std::memcpy(tokens.data(), bytes.data(), tokens.size() * 4);
  return tokens;
}

/// Token ids and llama.cpp's logits of a sequence; the shape comes from logits-<stem>.json and the
/// two binary files must match it (a failed expectation otherwise).
inline ReferenceSequence load_reference_sequence(const std::string& arch, const std::string& key) {
  ReferenceSequence s;
  s.arch = arch;
  s.key = key;
  const std::string stem = "tiny-" + arch + "-" + key;
  const auto meta = nlohmann::json::parse(read_file(reference("logits/logits-" + stem + ".json")));
  const int64_t n_tokens = meta.at("shape").at(0);
  s.n_vocab = meta.at("shape").at(1);
  s.tokens = load_reference_tokens(arch, key);
  EXPECT_EQ(s.tokens.size(), size_t(n_tokens)) << stem;
  s.tokens.resize(n_tokens);
  const auto f16 = read_file(reference("logits/logits-" + stem + ".f16"));
  EXPECT_EQ(f16.size(), size_t(2 * n_tokens * s.n_vocab)) << stem;
  s.logits.resize(n_tokens * s.n_vocab);
  for (size_t i = 0; i < s.logits.size() && 2 * i + 2 <= f16.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, f16.data() + 2 * i, 2);  // IEEE binary16, little-endian (x86)
    s.logits[i] = test::f16_bits_to_f32(h);
  }
  return s;
}

/// Which sequences of ../shared/reference/logits are here: those with llama.cpp's logits, or all
/// those whose token ids are shipped (sequence b's logits are held back).
enum class SequenceFiles { kLogits, kTokens };

inline std::vector<std::string> reference_sequence_keys(const std::string& arch, SequenceFiles need) {
  std::vector<std::string> keys;
  for (const char* k : {"a", "b", "c", "m"}) {
    const std::string stem = "tiny-" + arch + "-" + k;
    const std::string rel =
        need == SequenceFiles::kLogits ? "logits/logits-" + stem + ".f16" : "logits/tokens-" + stem + ".i32";
    if (std::filesystem::exists(reference(rel))) keys.push_back(k);
  }
  return keys;
}

struct LogitsFigures {
  double max_rel = 0, median_rel = 0, argmax_agree = 0;
};

/// Per-row relative RMS ||ours - ref|| / ||ref|| (max and median over rows) and the fraction of rows
/// whose argmax agrees, for n rows of v logits each. With `verbose`, rows whose argmax differs are
/// printed with the reference's margin ref[ref_top] - ref[our_top] (how close to a tie its own choice
/// was).
inline LogitsFigures compare_logits(const float* ours, const float* ref, int64_t n, int64_t v,
                                    bool verbose = false) {
  std::vector<double> rel(n);
  int agree = 0;
  for (int64_t r = 0; r < n; ++r) {
    const float* a = ours + r * v;
    const float* b = ref + r * v;
    double diff = 0, norm = 0;
    int64_t am = 0, bm = 0;
    for (int64_t i = 0; i < v; ++i) {
      diff += double(a[i] - b[i]) * (a[i] - b[i]);
      norm += double(b[i]) * b[i];
      if (a[i] > a[am]) am = i;
      if (b[i] > b[bm]) bm = i;
    }
    rel[r] = std::sqrt(diff / norm);
    agree += am == bm;
    if (verbose && am != bm) {
      std::printf(
          "  row %lld: argmax ours %lld, reference %lld; reference margin %.5f, ours %.5f (rel RMS %.4f)\n",
          (long long)r, (long long)am, (long long)bm, b[bm] - b[am], a[am] - a[bm], rel[r]);
    }
  }
  LogitsFigures f;
  f.max_rel = *std::max_element(rel.begin(), rel.end());
  std::sort(rel.begin(), rel.end());
  f.median_rel = n % 2 ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]);
  f.argmax_agree = double(agree) / n;
  return f;
}

/// `ours` (the sequence's n_tokens x n_vocab) against the sequence's llama.cpp logits.
inline LogitsFigures compare_logits(const ReferenceSequence& s, const std::vector<float>& ours,
                                    bool verbose = false) {
  return compare_logits(ours.data(), s.logits.data(), static_cast<int64_t>(s.tokens.size()), s.n_vocab,
                        verbose);
}

inline bool within_reference_bounds(const LogitsFigures& f) {
  return f.max_rel <= kRefMaxRowRelRms && f.median_rel <= kRefMedianRowRelRms &&
         f.argmax_agree >= kRefMinArgmaxAgreement;
}

/// One expectation per bound, so a failure names which one (and `where`).
inline void expect_within_reference_bounds(const LogitsFigures& f, const std::string& where) {
  EXPECT_LE(f.max_rel, kRefMaxRowRelRms) << where;
  EXPECT_LE(f.median_rel, kRefMedianRowRelRms) << where;
  EXPECT_GE(f.argmax_agree, kRefMinArgmaxAgreement) << where;
}

}  // namespace dllm::test
