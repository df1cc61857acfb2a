// A LogitsSource with scripted logits for sampler tests: a function of (canvas, model row) gives
// each row; every call is recorded (rows asked for, canvas seen).
#pragma once

#include <cmath>
#include <functional>
#include <span>
#include <vector>

#include "diffusion/logits_source.h"

namespace dllm::test {

class ScriptedSource : public diffusion::LogitsSource {
 public:
  using RowFn = std::function<void(std::span<const int32_t> canvas, int32_t row, float* out)>;
  ScriptedSource(int64_t n_vocab, RowFn fn) : n_vocab_(n_vocab), fn_(std::move(fn)) {}

  int64_t n_vocab() const override { return n_vocab_; }
  void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) override {
    calls_rows.emplace_back(rows.begin(), rows.end());
    calls_canvas.emplace_back(canvas.begin(), canvas.end());
    for (size_t j = 0; j < rows.size(); ++j) fn_(canvas, rows[j], out + j * n_vocab_);
  }

  std::vector<std::vector<int32_t>> calls_rows;
  std::vector<std::vector<int32_t>> calls_canvas;

 private:
  int64_t n_vocab_;
  RowFn fn_;
};

/// Logits whose softmax is p at `token` and (1 - p) / (n - 2) at every other id except `excluded`
/// (the mask id, which the sampler never samples), whose logit is -inf.
inline void peaked(float* out, int64_t n, int32_t token, double p, int32_t excluded) {
  const float rest = static_cast<float>(std::log((1.0 - p) / static_cast<double>(n - 2)));
  for (int64_t i = 0; i < n; ++i) out[i] = rest;
  out[token] = static_cast<float>(std::log(p));
  out[excluded] = -INFINITY;
}

/// Logits = log(probs) (a probability of 0 becomes -100: e^-100 is far below every tolerance used).
inline void from_probs(float* out, const std::vector<double>& probs) {
  for (size_t i = 0; i < probs.size(); ++i)
    out[i] = probs[i] > 0 ? static_cast<float>(std::log(probs[i])) : -100.0f;
}

}  // namespace dllm::test
