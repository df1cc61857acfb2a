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
  s.ids.resize(logits.size());
  const size_t k = passes.find_bucket(s.bucket.data(), logits.size(), static_cast<uint16_t>(b), s.ids.data());
  s.cand.resize(k);
  for (size_t j = 0; j < k; ++j) s.cand[j] = {scaled(logits[s.ids[j]], temperature), s.ids[j]};
  std::sort(s.cand.begin(), s.cand.end(), [](const auto& a, const auto& c) {
    return a.first > c.first || (a.first == c.first && a.second < c.second);
  });
}

/// Where the filters cut: ids in buckets after `bucket` are out, those in it as the cut left them;
/// kept_mass = the sum of the kept e, bucket sums (in id order) added bucket by bucket.
struct Cut {
  int bucket = kDreamBuckets - 1;
  double kept_mass = 0.0;
};

/// top_p_logits on e = e^(v - m) with sum z: keeps the ids of the top c + 1 in descending v, c the
/// largest count whose mass stays <= top_p * z (all ids when every prefix does). Within the returned
/// bucket the ids past the cut are dropped here (e = 0, bucket kNoBucket) and its mass and count
/// become the kept part's; the later buckets go in DreamPasses::keep_through or finish.
Cut top_p_cut(double top_p, double z, std::span<const float> logits, double temperature,
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
    if (s.mass[b] == 0.0) continue;  // nothing there can pass the target
    bucket_in_order(b, logits, temperature, passes, s);
    const double before = acc;
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
    if (!s.count.empty()) s.count[b] = static_cast<uint32_t>(kept);
    s.mass[b] = acc - before;
    return {b, acc};
  }
  return {kDreamBuckets - 1, acc};
}

/// top_k_logits on the ids of `cut`: drops those whose v is below the k-th largest v among them (ties
/// kept). Within the returned bucket the ids below are dropped here, the later buckets as for top_p.
Cut top_k_cut(int64_t top_k, Cut cut, std::span<const float> logits, double temperature,
              std::vector<double>& e, const DreamPasses& passes, DreamScratch& s) {
  uint64_t total = 0;
  for (int b = 0; b <= cut.bucket; ++b) total += s.count[b];
  if (static_cast<uint64_t>(top_k) >= total) return cut;  // the k-th largest is -inf or below: no-op
  const uint64_t k = static_cast<uint64_t>(top_k);
  uint64_t before = 0;
  double mass = 0.0;
  int b = 0;
  for (; before + s.count[b] < k; ++b) {
    before += s.count[b];
    mass += s.mass[b];
  }
  bucket_in_order(b, logits, temperature, passes, s);
  const double kth = s.cand[static_cast<size_t>(k - before - 1)].first;
  for (const auto& [v, id] : s.cand) {
    if (v < kth) {
      e[id] = 0.0;
      s.bucket[id] = kNoBucket;
    } else {
      mass += e[id];
    }
  }
  return {b, mass};
}

/// dream_probs, then DreamPasses::finish with `entropy` and the draw u (<= 0: none).
RowEnd dream_probs_impl(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                        double top_p, int64_t top_k, std::vector<double>& probs, const DreamPasses& passes,
                        bool entropy, double u) {
  const size_t n = logits.size();
  probs.resize(n);
  // The row maximum of v = l / T is (max l) / T: IEEE division is monotonic, so the largest
  // quotient is the quotient of the largest logit (NaN logits are skipped, as std::max skips them).
  const double m = scaled(passes.max_allowed(logits.data(), allowed.data(), n), temperature);
  const bool filter = top_p < 1.0 || top_k > 0;
  DreamScratch& s = dream_scratch();
  if (filter) {
    s.bucket.resize(n);
    s.mass.assign(kDreamBuckets, 0.0);
  }
  // Counts only for top_k (top_p needs the masses alone); empty `count` means none.
  if (top_k > 0) {
    s.count.assign(kDreamBuckets, 0);
  } else {
    s.count.clear();
  }
  const double z = passes.exp_shifted(logits.data(), allowed.data(), n, temperature, m, probs.data(),
                                      filter ? s.bucket.data() : nullptr, s.mass.data(),
                                      top_k > 0 ? s.count.data() : nullptr);
  // A row without a finite allowed logit has z = 0 (or NaN): nothing to filter or normalize.
  if (!(z > 0.0 && std::isfinite(z))) return {};
  Cut cut{kDreamBuckets - 1, z};
  if (top_p < 1.0) cut = top_p_cut(top_p, z, logits, temperature, probs, passes, s);
  if (top_k > 0) cut = top_k_cut(top_k, cut, logits, temperature, probs, passes, s);
  // softmax over what is left: e^(v - m) / sum (the maximum is never dropped, so the shift is the
  // same before and after the filters).
  const bool by_bucket = filter && passes.kept_mass_from_buckets;
  const double zk = !filter     ? z
                    : by_bucket ? cut.kept_mass
                                : passes.keep_through(probs.data(), s.bucket.data(), n, cut.bucket);
  if (!(zk > 0.0)) return {};
  return passes.finish(probs.data(), by_bucket ? s.bucket.data() : nullptr, n, cut.bucket, zk, entropy, u);
}

}  // namespace

void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order,
                 const DreamPasses& passes) {
  (void)order;
  dream_probs_impl(logits, allowed, temperature, top_p, top_k, probs, passes, false, 0.0);
}

void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order,
                 Isa isa) {
  dream_probs(logits, allowed, temperature, top_p, top_k, probs, order, dream_passes(isa));
}

RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order, const DreamPasses& passes) {
  (void)order;
  // Categorical(probs).sample(): inverse CDF with one uniform, drawn in the last pass over the row
  // (DreamPasses::finish); ids with probability 0 are never chosen.
  const double u = temperature > 0.0 ? categorical->uniform_open() : 0.0;
  const RowEnd end = dream_probs_impl(logits, allowed, temperature, top_p, top_k, probs, passes,
                                      kind == DreamConfidence::kNegEntropy, u);
  const size_t n = probs.size();
  RowChoice out;
  if (temperature > 0.0) {
    out.token = end.draw;
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
      out.confidence = end.neg_entropy;
      break;
  }
  return out;
}

RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order, Isa isa) {
  return dream_row(logits, allowed, temperature, top_p, top_k, kind, categorical, probs, order,
                   dream_passes(isa));
}

}  // namespace dllm::diffusion
