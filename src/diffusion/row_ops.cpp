// Per-row statistics: LLaDA argmax + Gumbel + softmax confidence, Dream sample_tokens.
#include "diffusion/row_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

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

namespace {

/// Per-thread scratch of a Dream row (the sampler calls from OpenMP threads, one row at a time).
struct DreamScratch {
  std::vector<uint16_t> bucket;                  ///< per id: its histogram bucket, kNoBucket when out
  std::vector<double> mass;                      ///< per bucket: the sum of e^(v - m), in id order
  std::vector<uint32_t> count;                   ///< per bucket: how many ids
  std::vector<std::pair<double, int32_t>> cand;  ///< (v, id) of the bucket being ordered
  std::vector<int32_t> ids;                      ///< the ids of that bucket
};

DreamScratch& dream_scratch() {
  thread_local DreamScratch s;
  return s;
}

double scaled(float logit, double temperature) {
  return temperature > 0.0 ? static_cast<double>(logit) / temperature : static_cast<double>(logit);
}

/// (v, id) of the ids in bucket b, in top_p's order: descending v, the lower id first on ties.
void bucket_in_order(int b, std::span<const float> logits, double temperature, const DreamPasses& passes,
                     DreamScratch& s) {
  s.ids.resize(s.count[b]);
  const size_t k = passes.find_bucket(s.bucket.data(), logits.size(), static_cast<uint16_t>(b), s.ids.data());
  s.cand.resize(k);
  for (size_t j = 0; j < k; ++j) s.cand[j] = {scaled(logits[s.ids[j]], temperature), s.ids[j]};
  std::sort(s.cand.begin(), s.cand.end(), [](const auto& a, const auto& c) {
    return a.first > c.first || (a.first == c.first && a.second < c.second);
  });
}

/// top_p_logits on e = e^(v - m) with sum z: keeps the ids of the top c + 1 in descending v, c the
/// largest count whose mass stays <= top_p * z (all ids when every prefix does). Returns the last
/// bucket kept (kDreamBuckets - 1: all); within it the ids past the cut are dropped here, the later
/// buckets by DreamPasses::keep_through. count[] of the returned bucket becomes the ids kept in it.
int top_p_cut(double top_p, double z, std::span<const float> logits, double temperature,
              std::vector<double>& e, const DreamPasses& passes, DreamScratch& s) {
  const double target = top_p * z;
  double acc = 0.0;
  int b = 0;
  for (; b < kDreamBuckets; ++b) {
    if (acc + s.mass[b] > target) break;
    acc += s.mass[b];
  }
  // Buckets before b are kept whole. Walk b (and, should rounding of the bucket sums say so, the
  // next ones) in order until the mass passes the target: that id is the last kept.
  for (; b < kDreamBuckets; ++b) {
    if (s.count[b] == 0) continue;
    bucket_in_order(b, logits, temperature, passes, s);
    size_t kept = 0;
    bool crossed = false;
    while (kept < s.cand.size() && !crossed) {
      const double x = e[s.cand[kept].second];
      crossed = acc + x > target;
      acc += x;
      ++kept;
    }
    if (!crossed) continue;
    for (size_t j = kept; j < s.cand.size(); ++j) {
      e[s.cand[j].second] = 0.0;
      s.bucket[s.cand[j].second] = kNoBucket;
    }
    s.count[b] = static_cast<uint32_t>(kept);
    return b;
  }
  return kDreamBuckets - 1;
}

/// top_k_logits on the ids in buckets <= cut: drops those whose v is below the k-th largest v among
/// them (ties kept). Returns the new last bucket kept; within it the ids below are dropped here.
int top_k_cut(int64_t top_k, int cut, std::span<const float> logits, double temperature,
              std::vector<double>& e, const DreamPasses& passes, DreamScratch& s) {
  uint64_t total = 0;
  for (int b = 0; b <= cut; ++b) total += s.count[b];
  if (static_cast<uint64_t>(top_k) >= total) return cut;  // the k-th largest is -inf or below: no-op
  const uint64_t k = static_cast<uint64_t>(top_k);
  uint64_t before = 0;
  int b = 0;
  while (before + s.count[b] < k) before += s.count[b++];
  bucket_in_order(b, logits, temperature, passes, s);
  const double kth = s.cand[static_cast<size_t>(k - before - 1)].first;
  for (const auto& [v, id] : s.cand) {
    if (v < kth) {
      e[id] = 0.0;
      s.bucket[id] = kNoBucket;
    }
  }
  return b;
}

}  // namespace

void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order,
                 const DreamPasses& passes) {
  (void)order;
  const size_t n = logits.size();
  probs.resize(n);
  // The row maximum of v = l / T is (max l) / T: IEEE division is monotonic, so the largest
  // quotient is the quotient of the largest logit (NaN logits are skipped, as std::max skips them).
  const double m = scaled(max_allowed(logits.data(), allowed.data(), n), temperature);
  const bool filter = top_p < 1.0 || top_k > 0;
  DreamScratch& s = dream_scratch();
  if (filter) {
    s.bucket.resize(n);
    s.mass.assign(kDreamBuckets, 0.0);
    s.count.assign(kDreamBuckets, 0);
  }
  const double z = passes.exp_shifted(logits.data(), allowed.data(), n, temperature, m, probs.data(),
                                      filter ? s.bucket.data() : nullptr, s.mass.data(), s.count.data());
  // A row without a finite allowed logit has z = 0 (or NaN): nothing to filter or normalize.
  const bool usable = z > 0.0 && std::isfinite(z);
  int cut = kDreamBuckets - 1;
  if (usable && top_p < 1.0) cut = top_p_cut(top_p, z, logits, temperature, probs, passes, s);
  if (usable && top_k > 0) cut = top_k_cut(top_k, cut, logits, temperature, probs, passes, s);
  // softmax over what is left: e^(v - m) / sum (the maximum is never dropped, so the shift is the
  // same before and after the filters).
  const double zk = filter ? passes.keep_through(probs.data(), s.bucket.data(), n, cut) : z;
  if (zk > 0.0) passes.divide(probs.data(), n, zk);
}

void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order) {
  dream_probs(logits, allowed, temperature, top_p, top_k, probs, order, dream_passes());
}

RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order, const DreamPasses& passes) {
  dream_probs(logits, allowed, temperature, top_p, top_k, probs, order, passes);
  const size_t n = probs.size();
  RowChoice out;
  if (temperature > 0.0) {
    // Categorical(probs).sample(): inverse CDF; ids with probability 0 are never chosen. Adding a 0
    // leaves acc unchanged, so the first id where acc passes u (acc starts at 0 < u) has probability
    // > 0 without a test on every id (a filtered row has zeros at random places).
    const double u = categorical->uniform_open();
    double acc = 0.0;
    for (size_t i = 0; i < n; ++i) {
      acc += probs[i];
      if (acc > u) {
        out.token = static_cast<int32_t>(i);
        break;
      }
    }
    // u above the rounded total: the last id with probability > 0 (or NaN).
    for (size_t i = n; i-- > 0 && out.token < 0;)
      if (!(probs[i] <= 0.0)) out.token = static_cast<int32_t>(i);
  } else {
    double best = -1.0;
    for (size_t i = 0; i < n; ++i)
      if (allowed[i] && probs[i] > best) {
        best = probs[i];
        out.token = static_cast<int32_t>(i);
      }
  }
  // Every probability 0 (a row without a finite allowed logit, a broken model): the first allowed id.
  for (size_t i = 0; i < n && out.token < 0; ++i)
    if (allowed[i]) out.token = static_cast<int32_t>(i);
  if (out.token < 0) return out;  // no allowed id: check_params rules this out
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
    case DreamConfidence::kNegEntropy:
      out.confidence = passes.neg_entropy(probs.data(), n);
      break;
  }
  return out;
}

RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order) {
  return dream_row(logits, allowed, temperature, top_p, top_k, kind, categorical, probs, order,
                   dream_passes());
}

}  // namespace dllm::diffusion
