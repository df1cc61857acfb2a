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
  widths_.embd = config_.n_embd;
  widths_.q = config_.n_head * config_.head_dim;
  widths_.kv = config_.n_head_kv * config_.head_dim;
  widths_.ff = config_.n_ff;
}

RopeTable ForwardPlan::make_rope_table() const {
  return RopeTable(config_.head_dim, max_tokens_, config_.rope_freq_base);
}

void ForwardPlan::check_tokens(std::span<const int32_t> tokens, int64_t n) const {
  if (n <= 0 || n > max_tokens_) {
    throw Error("forward: " + std::to_string(n) + " tokens, expected 1.." + std::to_string(max_tokens_) +
                " (max_tokens)");
  }
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (tokens[t] < 0 || tokens[t] >= n_vocab_embd_) {
      throw Error("token id " + std::to_string(tokens[t]) + " at position " + std::to_string(t % n) +
                  " is outside the vocabulary [0, " + std::to_string(n_vocab_embd_) + ")");
    }
  }
}

void ForwardPlan::check_rows(std::span<const int32_t> rows, int64_t begin, int64_t end) const {
  if (static_cast<int64_t>(rows.size()) > max_tokens_) {
    throw Error("forward: " + std::to_string(rows.size()) + " logits rows requested, at most " +
                std::to_string(max_tokens_));
  }
  for (const int32_t r : rows) {
    if (r < begin || r >= end) {
      throw Error("logits row " + std::to_string(r) + " is outside the " +
                  (begin == 0 ? std::string("sequence") : std::string("window")) + " [" +
                  std::to_string(begin) + ", " + std::to_string(end) + ")");
    }
  }
}

RowLayout ForwardPlan::check_forward(std::span<const int32_t> tokens, std::span<const int32_t> rows) const {
  const auto n = static_cast<int64_t>(tokens.size());
  check_tokens(tokens, n);
  check_rows(rows, 0, n);
  return RowLayout{1, n, 0, n};
}

RowLayout ForwardPlan::check_batch(std::span<const int32_t> tokens, int64_t n_seq,
                                   std::span<const int32_t> rows) const {
  if (n_seq < 1 || n_seq > max_batch_) {
    throw Error("forward_batch: " + std::to_string(n_seq) + " sequences, expected 1.." +
                std::to_string(max_batch_) + " (max_batch)");
  }
  if (tokens.size() % static_cast<size_t>(n_seq) != 0) {
    throw Error("forward_batch: " + std::to_string(tokens.size()) + " tokens do not split into " +
                std::to_string(n_seq) + " sequences of one length");
  }
  const auto n = static_cast<int64_t>(tokens.size()) / n_seq;
  check_tokens(tokens, n);
  check_rows(rows, 0, n);
  return RowLayout{n_seq, n, 0, n};
}

RowLayout ForwardPlan::check_window(int64_t n, int64_t begin, int64_t end,
                                    std::span<const int32_t> rows) const {
  if (begin < 0 || end > n || begin >= end) {
    throw Error("forward_window: window [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") is empty or outside the canvas [0, " + std::to_string(n) + ")");
  }
  check_rows(rows, begin, end);
  return RowLayout{1, n, begin, end};
}

}  // namespace dllm::model
