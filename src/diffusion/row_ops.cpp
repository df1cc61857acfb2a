// Per-row statistics: LLaDA argmax + Gumbel + softmax confidence, Dream sample_tokens.
#include "diffusion/row_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dllm::diffusion {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

}  // namespace

RowChoice llada_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    Rng* gumbel) {
  const size_t n = logits.size();
  RowChoice out;
  // x0: argmax of the (noised) logits; strict > keeps the lowest id on ties, as torch.argmax.
  double best = kNegInf;
  if (temperature > 0.0) {
    // One uniform per id, drawn for every id (allowed or not) so that id k always gets draw k.
    for (size_t i = 0; i < n; ++i) {
      const double u = gumbel->uniform_open();
      if (!allowed[i]) continue;
      const double v = std::exp(static_cast<double>(logits[i])) / std::pow(-std::log(u), temperature);
      if (out.token < 0 || v > best) {
        best = v;
        out.token = static_cast<int32_t>(i);
      }
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (!allowed[i]) continue;
      const double v = logits[i];
      if (out.token < 0 || v > best) {
        best = v;
        out.token = static_cast<int32_t>(i);
      }
    }
  }
  if (out.token < 0) return out;  // no allowed id: check_params rules this out
  // Confidence: noise-free softmax over the allowed ids, f64.
  double m = kNegInf;
  for (size_t i = 0; i < n; ++i)
    if (allowed[i]) m = std::max(m, static_cast<double>(logits[i]));
  double z = 0.0;
  for (size_t i = 0; i < n; ++i)
    if (allowed[i]) z += std::exp(static_cast<double>(logits[i]) - m);
  out.confidence = std::exp(static_cast<double>(logits[out.token]) - m) / z;
  return out;
}

void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order) {
  const size_t n = logits.size();
  probs.resize(n);
  size_t n_allowed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (allowed[i]) {
      probs[i] = temperature > 0.0 ? static_cast<double>(logits[i]) / temperature : logits[i];
      ++n_allowed;
    } else {
      probs[i] = kNegInf;
    }
  }
  // top_p_logits: walk ids by decreasing logit; id j (j >= 1 in that order) is dropped when the
  // cumulative softmax of the ids before it exceeds top_p. Only a prefix of the order is needed, so
  // sort a growing prefix instead of the whole vocabulary.
  if (top_p < 1.0 && n_allowed > 0) {
    double m = kNegInf;
    for (size_t i = 0; i < n; ++i) m = std::max(m, probs[i]);
    double z = 0.0;
    for (size_t i = 0; i < n; ++i)
      if (probs[i] != kNegInf) z += std::exp(probs[i] - m);
    order.clear();
    for (size_t i = 0; i < n; ++i)
      if (allowed[i]) order.push_back(static_cast<int32_t>(i));
    auto by_value = [&](int32_t a, int32_t b) {
      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    };
    size_t prefix = std::min<size_t>(64, order.size());
    size_t keep = order.size();
    for (;;) {
      std::partial_sort(order.begin(), order.begin() + prefix, order.end(), by_value);
      double cum = 0.0;
      bool found = false;
      for (size_t j = 0; j < prefix; ++j) {
        if (j > 0 && cum > top_p) {
          keep = j;
          found = true;
          break;
        }
        cum += std::exp(probs[order[j]] - m) / z;
      }
      if (!found && prefix < order.size() && cum > top_p) {
        keep = prefix;  // the id after the prefix is the first dropped one
        found = true;
      }
      if (found || prefix == order.size()) break;
      prefix = std::min(order.size(), prefix * 4);
    }
    for (size_t j = keep; j < order.size(); ++j) probs[order[j]] = kNegInf;
  }
  // top_k_logits: drop logits strictly below the k-th largest (over the whole row, as torch.topk).
  if (top_k > 0) {
    const size_t k = std::min<size_t>(static_cast<size_t>(top_k), n);
    std::vector<double> tmp(probs.begin(), probs.end());
    std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
    const double kth = tmp[k - 1];
    for (size_t i = 0; i < n; ++i)
      if (probs[i] < kth) probs[i] = kNegInf;
  }
  // softmax
  double m = kNegInf;
  for (size_t i = 0; i < n; ++i) m = std::max(m, probs[i]);
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double e = probs[i] == kNegInf ? 0.0 : std::exp(probs[i] - m);
    probs[i] = e;
    z += e;
  }
  if (z > 0.0)
    for (size_t i = 0; i < n; ++i) probs[i] /= z;
}

RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order) {
  dream_probs(logits, allowed, temperature, top_p, top_k, probs, order);
  const size_t n = probs.size();
  RowChoice out;
  if (temperature > 0.0) {
    // Categorical(probs).sample(): inverse CDF; ids with probability 0 are never chosen.
    const double u = categorical->uniform_open();
    double acc = 0.0;
    int32_t last_nonzero = -1;
    for (size_t i = 0; i < n; ++i) {
      if (probs[i] <= 0.0) continue;
      last_nonzero = static_cast<int32_t>(i);
      acc += probs[i];
      if (acc > u) {
        out.token = static_cast<int32_t>(i);
        break;
      }
    }
    if (out.token < 0) out.token = last_nonzero;  // u above the rounded total
  } else {
    double best = -1.0;
    for (size_t i = 0; i < n; ++i)
      if (probs[i] > best) {
        best = probs[i];
        out.token = static_cast<int32_t>(i);
      }
  }
  if (out.token < 0) return out;
  switch (kind) {
    case DreamConfidence::kProb:
      out.confidence = probs[out.token];
      break;
    case DreamConfidence::kMargin: {
      double top1 = 0.0, top2 = 0.0;
      for (size_t i = 0; i < n; ++i) {
        if (probs[i] > top1) {
          top2 = top1;
          top1 = probs[i];
        } else if (probs[i] > top2) {
          top2 = probs[i];
        }
      }
      out.confidence = top1 - top2;
      break;
    }
    case DreamConfidence::kNegEntropy: {
      double s = 0.0;
      for (size_t i = 0; i < n; ++i) s += probs[i] * std::log(probs[i] + 1e-10);
      out.confidence = s;
      break;
    }
  }
  return out;
}

}  // namespace dllm::diffusion
