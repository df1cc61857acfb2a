// Per-row statistics: LLaDA argmax + Gumbel + softmax confidence, Dream sample_tokens.
#include "diffusion/row_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "diffusion/row_sums.h"

namespace dllm::diffusion {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

RowChoice llada_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    Rng* gumbel, Isa isa) {
  const size_t n = logits.size();
  RowChoice out;
  // The largest allowed logit: the greedy argmax's value and the softmax's shift (one pass for both).
  const float top = max_allowed(isa, logits.data(), allowed.data(), n);
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
    // The first allowed id holding the largest allowed logit: torch.argmax's lowest id on ties.
    for (size_t i = 0; i < n && std::isfinite(top); ++i) {
      if (allowed[i] && logits[i] == top) {
        out.token = static_cast<int32_t>(i);
        break;
      }
    }
    // A row without a finite allowed logit (a broken model) keeps the plain scan's answer.
    for (size_t i = 0; i < n && !std::isfinite(top); ++i) {
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
  const double m = top;
  const double z = std::isfinite(m) ? sum_exp_shifted(isa, logits.data(), allowed.data(), n, m) : kNaN;
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
  // top_p_logits: in the descending order, id j (j >= 1) is dropped when the cumulative softmax of
  // the ids before it exceeds top_p. So the kept ids are the top `keep`, keep = the smallest count
  // whose mass exceeds top_p (all ids when none does). Found by quickselect on the count (O(n)
  // expected) instead of a full sort: a flat row at top_p .95 would otherwise sort the vocabulary.
  // Per-thread scratch (the sampler calls this from OpenMP threads): e^(v - max) per id, computed
  // once and reused by the final softmax (the row maximum survives both filters).
  thread_local std::vector<double> ex;
  bool have_ex = false;
  double m = kNegInf;
  for (size_t i = 0; i < n; ++i) m = std::max(m, probs[i]);
  if (top_p < 1.0 && n_allowed > 0) {
    ex.resize(n);
    double z = 0.0;
    for (size_t i = 0; i < n; ++i) z += (ex[i] = probs[i] == kNegInf ? 0.0 : std::exp(probs[i] - m));
    have_ex = true;
    order.clear();
    for (size_t i = 0; i < n; ++i)
      if (allowed[i]) order.push_back(static_cast<int32_t>(i));
    // Descending value, lower id first on ties: a strict total order, so the kept set is unique.
    auto by_value = [&](int32_t a, int32_t b) {
      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    };
    // Invariant: order[0, lo) are the top lo ids with mass `base` <= top_p; the top hi ids have mass
    // > top_p, or hi is the whole row.
    size_t lo = 0, hi = order.size();
    double base = 0.0;
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      std::nth_element(order.begin() + lo, order.begin() + mid, order.begin() + hi, by_value);
      double mass = 0.0;
      for (size_t j = lo; j < mid; ++j) mass += ex[order[j]] / z;
      if (base + mass > top_p) {
        hi = mid;
      } else {
        base += mass;
        lo = mid;
      }
    }
    // order[0, hi) are the top hi ids: they stay.
    for (size_t j = hi; j < order.size(); ++j) probs[order[j]] = kNegInf;
  }
  // top_k_logits: drop logits strictly below the k-th largest (over the whole row, as torch.topk).
  if (top_k > 0) {
    const size_t k = std::min<size_t>(static_cast<size_t>(top_k), n);
    thread_local std::vector<double> tmp;
    tmp.assign(probs.begin(), probs.end());
    std::nth_element(tmp.begin(), tmp.begin() + (k - 1), tmp.end(), std::greater<double>());
    const double kth = tmp[k - 1];
    for (size_t i = 0; i < n; ++i)
      if (probs[i] < kth) probs[i] = kNegInf;
  }
  // softmax (the maximum m is never filtered out, so e^(v - m) is unchanged by the filters)
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double e = probs[i] == kNegInf ? 0.0 : have_ex ? ex[i] : std::exp(probs[i] - m);
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
