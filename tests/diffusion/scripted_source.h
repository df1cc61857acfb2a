// A forward::Forward with scripted logits for sampler tests: a function of (canvas, model row) gives
// each row; every segment is recorded (rows asked for, canvas seen). A segment with a K/V state sees
// the canvas its state has been given (the refresh's canvas with every later window's tokens written
// over it), which is the current canvas whenever the windows cover every position that changed (the
// sampler's Fast-dLLM windows do): the scripted logits are those of a model whose cached steps are
// exact.
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "forward/pass.h"

namespace dllm::test {

class ScriptedSource : public forward::Forward {
 public:
  using RowFn = std::function<void(std::span<const int32_t> canvas, int32_t row, float* out)>;
  ScriptedSource(int64_t n_vocab, RowFn fn) : n_vocab_(n_vocab), fn_(std::move(fn)) {}

  int64_t n_vocab() const override { return n_vocab_; }
  forward::Capabilities capabilities() const override {
    forward::Capabilities caps;
    caps.kv_state = caps.masks = true;
    caps.max_rows = caps.max_segments = int64_t{1} << 40;
    return caps;
  }
  void forward(std::span<const forward::Segment> segments) override {
    for (const forward::Segment& s : segments) {
      std::span<const int32_t> canvas = s.tokens;
      if (s.kv != nullptr) {
        on_kv_segment(s);
        std::vector<int32_t>& c = canvases_[s.kv];
        if (s.first == 0 && s.kv->rows() == 0) c.clear();
        if (c.size() < static_cast<size_t>(s.first + s.n_rows())) c.resize(s.first + s.n_rows());
        std::copy(s.tokens.begin(), s.tokens.end(), c.begin() + s.first);
        s.kv->set_rows(static_cast<int64_t>(c.size()));
        canvas = c;
      }
      calls_rows.emplace_back(s.logit_rows.begin(), s.logit_rows.end());
      calls_canvas.emplace_back(canvas.begin(), canvas.end());
      for (size_t j = 0; j < s.logit_rows.size(); ++j) fn_(canvas, s.logit_rows[j], s.logits + j * n_vocab_);
    }
  }

  std::vector<std::vector<int32_t>> calls_rows;
  std::vector<std::vector<int32_t>> calls_canvas;

 protected:
  /// Called for each segment with a K/V state, before its rows are written into the state.
  virtual void on_kv_segment(const forward::Segment&) {}

 private:
  int64_t n_vocab_;
  RowFn fn_;
  std::map<const forward::KvState*, std::vector<int32_t>> canvases_;
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
