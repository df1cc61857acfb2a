// ForwardPlan (forward_plan.h): the device-independent half of a forward pass.
#include "model/forward_plan.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "model/model.h"

namespace dllm::model {

int64_t ActivationWidths::widest_input() const {
  return std::max({embd, q, ff});
}

ForwardPlan::ForwardPlan(const Model& model, int64_t max_tokens, int max_batch,
                         std::optional<RopeMode> rope_mode)
    : config_(model.config()), n_vocab_embd_(model.n_vocab_embd()) {
  if (max_tokens <= 0) throw Error("max_tokens must be positive (got " + std::to_string(max_tokens) + ")");
  if (max_batch < 1) throw Error("max_batch must be positive (got " + std::to_string(max_batch) + ")");
  max_tokens_ = max_tokens;
  max_batch_ = max_batch;
  if (rope_mode) config_.rope_mode = *rope_mode;
  layers_ = describe_layers(config_);
  for (size_t il = 0; il < layers_.size(); ++il) {
    // Layers of one (n_rot, base, frequency divisors) share a RoPE table: the table of the first such
    // layer.
    const LayerDesc& d = layers_[il];
    size_t t = 0;
    while (t < rope_layers_.size() && (layers_[rope_layers_[t]].n_rot != d.n_rot ||
                                       layers_[rope_layers_[t]].rope_freq_base != d.rope_freq_base ||
                                       layers_[rope_layers_[t]].rope_freq_factors != d.rope_freq_factors))
      ++t;
    if (t == rope_layers_.size()) rope_layers_.push_back(il);
    rope_of_layer_.push_back(t);
  }
  rope_freqs_ = model.rope_freqs();
  widths_.embd = config_.n_embd;
  // The widest layer sizes every buffer (Gemma-4: global layers have larger heads, fewer K/V heads).
  for (const LayerDesc& d : layers_) {
    widths_.q = std::max(widths_.q, config_.n_head * d.head_dim);
    widths_.kv = std::max(widths_.kv, d.n_head_kv * d.head_dim);
    max_head_dim_ = std::max(max_head_dim_, d.head_dim);
  }
  widths_.ff = config_.n_ff;
}

std::vector<RopeTable> ForwardPlan::make_rope_tables() const {
  std::vector<RopeTable> tables;
  for (const size_t il : rope_layers_)
    tables.emplace_back(layers_[il].n_rot, max_tokens_, layers_[il].rope_freq_base,
                        layers_[il].rope_freq_factors ? rope_freqs_ : std::vector<float>{});
  return tables;
}

int64_t ForwardPlan::check_segment(const forward::Segment& s) const {
  const int64_t n = s.n_rows(), first = s.first;
  if (n <= 0 || n > max_tokens_) {
    throw Error("forward: " + std::to_string(n) + " tokens, expected 1.." + std::to_string(max_tokens_) +
                " (max_tokens)");
  }
  if (first < 0 || first + n > max_tokens_) {
    throw Error("forward: positions " + std::to_string(first) + ".." + std::to_string(first + n - 1) +
                " reach past max_tokens " + std::to_string(max_tokens_));
  }
  for (int64_t t = 0; t < n; ++t) {
    if (s.tokens[t] < 0 || s.tokens[t] >= n_vocab_embd_) {
      throw Error("token id " + std::to_string(s.tokens[t]) + " at position " + std::to_string(first + t) +
                  " is outside the vocabulary [0, " + std::to_string(n_vocab_embd_) + ")");
    }
  }
  if (static_cast<int64_t>(s.logit_rows.size()) > max_tokens_) {
    throw Error("forward: " + std::to_string(s.logit_rows.size()) + " logits rows requested, at most " +
                std::to_string(max_tokens_));
  }
  for (const int32_t r : s.logit_rows) {
    if (r < first || r >= first + n) {
      throw Error("logits row " + std::to_string(r) + " is outside the " +
                  (first == 0 ? std::string("sequence") : std::string("window")) + " [" +
                  std::to_string(first) + ", " + std::to_string(first + n) + ")");
    }
  }
  if (!s.self_cond.empty()) {
    if (!config_.self_conditioning)
      throw Error("forward: self-conditioning input given, but this model has no self_cond_* tensors");
    int64_t canvas = 0;
    for (int64_t t = 0; t < n; ++t) canvas += forward::causal_row(s.mask, first + t) ? 0 : 1;
    if (s.mask.kind != forward::MaskRule::Kind::kCausalPrompt ||
        static_cast<int64_t>(s.self_cond.size()) != canvas * config_.n_vocab) {
      throw Error("forward: self-conditioning input of " + std::to_string(s.self_cond.size()) +
                  " floats, expected the canvas rows (" + std::to_string(canvas) + ") x n_vocab (" +
                  std::to_string(config_.n_vocab) + ") under a causal-prompt mask");
    }
  }
  if (s.kv == nullptr) {
    if (first != 0) {
      throw Error("forward: a segment without a K/V state starts at position 0 (got " +
                  std::to_string(first) + ")");
    }
    return n;
  }
  if (first > s.kv->rows()) {
    throw Error("forward: the K/V state holds " + std::to_string(s.kv->rows()) +
                " positions, the segment starts at " + std::to_string(first) +
                ": run a refresh step first (the keys between would be missing)");
  }
  return std::max(s.kv->rows(), first + n);
}

}  // namespace dllm::model
