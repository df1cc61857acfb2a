// Per-row statistics against f64 formulas written here: Gumbel-max sampling frequencies, the
// noise-free confidence, Dream's top_p / top_k filters and its three confidences.
#include "diffusion/row_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

using namespace dllm::diffusion;

namespace {

std::vector<double> softmax(const std::vector<double>& l, double t = 1.0) {
  double m = -INFINITY;
  for (double v : l) m = std::max(m, v / t);
  std::vector<double> p(l.size());
  double z = 0;
  for (size_t i = 0; i < l.size(); ++i) z += (p[i] = std::exp(l[i] / t - m));
  for (double& v : p) v /= z;
  return p;
}

double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& probs, int64_t n) {
  double chi = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = probs[i] * static_cast<double>(n);
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<uint8_t> all_allowed(size_t n) {
  return std::vector<uint8_t>(n, 1);
}

}  // namespace

// add_gumbel_noise: argmax(exp(l) / (-log u)^T) samples from softmax(l / T). 4 ids, 200k draws from
// independent streams; chi-square with 3 degrees of freedom: 16.27 is the 0.1% critical value.
TEST(LladaRow, GumbelSamplesSoftmaxOverTemperature) {
  const std::vector<float> lf = {1.0f, 0.0f, -1.0f, 0.5f};
  const std::vector<double> l(lf.begin(), lf.end());
  const auto allowed = all_allowed(4);
  const int64_t n = 200000;
  for (double t : {0.7, 1.0, 1.5}) {
    std::vector<int64_t> counts(4, 0);
    for (int64_t i = 0; i < n; ++i) {
      Rng g = Rng::stream(42, RngPurpose::kGumbel, i, 7);
      counts[llada_row(lf, allowed, t, &g, dllm::best_isa()).token]++;
    }
    const auto expected = softmax(l, t);
    EXPECT_LT(chi_square(counts, expected, n), 16.27) << "T=" << t;
    // Power check: the same counts are far from softmax(l) (T ignored) unless T = 1.
    if (t != 1.0) {
      EXPECT_GT(chi_square(counts, softmax(l, 1.0), n), 100.0) << "T=" << t;
    }
  }
}

// generate.py l.101: p = softmax(logits) of the noise-free logits, even when x0 came from noisy ones.
TEST(LladaRow, ConfidenceIsNoiseFreeSoftmax) {
  const std::vector<float> lf = {0.3f, 0.2f, 0.1f, 0.25f, -0.5f};
  const std::vector<double> l(lf.begin(), lf.end());
  const auto p = softmax(l);
  const auto allowed = all_allowed(5);
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 2000; ++i) {
    Rng g = Rng::stream(1, RngPurpose::kGumbel, i, 0);
    const RowChoice c = llada_row(lf, allowed, 1.0, &g, dllm::best_isa());
    seen[c.token] = 1;
    EXPECT_NEAR(c.confidence, p[c.token], 1e-12);
  }
  EXPECT_EQ(std::accumulate(seen.begin(), seen.end(), 0), 5);  // the noise does move the argmax
}

TEST(LladaRow, GreedyArgmaxLowestIdOnTies) {
  const std::vector<float> lf = {-3.0f, -1.0f, -1.0f, -2.0f};  // all negative: no "min float" start bug
  const RowChoice c = llada_row(lf, all_allowed(4), 0.0, nullptr, dllm::best_isa());
  EXPECT_EQ(c.token, 1);
  const auto p = softmax({-3, -1, -1, -2});
  EXPECT_NEAR(c.confidence, p[1], 1e-12);
}

// Disallowed ids (mask id, ids the tokenizer lacks) take no part: as if their logit were -inf.
TEST(LladaRow, DisallowedIdsNeverChosenAndOutOfSoftmax) {
  const std::vector<float> lf = {0.0f, 50.0f, 1.0f, 60.0f};
  const std::vector<uint8_t> allowed = {1, 0, 1, 0};
  const auto p = softmax({0.0, 1.0});
  for (int i = 0; i < 500; ++i) {
    Rng g = Rng::stream(3, RngPurpose::kGumbel, i, 0);
    const RowChoice c = llada_row(lf, allowed, i % 2 ? 2.0 : 0.0, &g, dllm::best_isa());
    ASSERT_TRUE(c.token == 0 || c.token == 2);
    EXPECT_NEAR(c.confidence, c.token == 0 ? p[0] : p[1], 1e-12);
  }
}

// top_p_logits by hand for l = [2, 1, 0, -1, 3]: descending ids 4, 0, 1, 2, 3 with softmax
// .6364, .2341, .0861, .0317, .0117 and cumulative .6364, .8705, .9567, .9883, 1.
// top_p = .9: an id is dropped when the cumulative before it exceeds .9: ids 2 and 3 go.
TEST(DreamRow, TopPByHand) {
  const std::vector<float> lf = {2, 1, 0, -1, 3};
  std::vector<double> probs;
  std::vector<int32_t> order;
  dream_probs(lf, all_allowed(5), 0.0, 0.9, 0, probs, order, dllm::best_isa());
  const double z = std::exp(3.0) + std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(probs[4], std::exp(3.0) / z, 1e-12);
  EXPECT_NEAR(probs[0], std::exp(2.0) / z, 1e-12);
  EXPECT_NEAR(probs[1], std::exp(1.0) / z, 1e-12);
  EXPECT_EQ(probs[2], 0.0);
  EXPECT_EQ(probs[3], 0.0);
  // top_p = .5: the first id alone passes .5, so only it stays.
  dream_probs(lf, all_allowed(5), 0.0, 0.5, 0, probs, order, dllm::best_isa());
  EXPECT_EQ(probs[4], 1.0);
  // Temperature first: l / .5 = [4, 2, 0, -2, 6]: softmax .8647, .1170, ... cumulative .8647, .9818:
  // id 1 (cumulative before it .9818 > .9) is dropped, so ids 4 and 0 stay.
  dream_probs(lf, all_allowed(5), 0.5, 0.9, 0, probs, order, dllm::best_isa());
  const double z2 = std::exp(6.0) + std::exp(4.0);
  EXPECT_NEAR(probs[4], std::exp(6.0) / z2, 1e-12);
  EXPECT_NEAR(probs[0], std::exp(4.0) / z2, 1e-12);
  EXPECT_EQ(probs[1], 0.0);
}

// A flat row needs the whole sort (the prefix-growing path): 1000 equal logits, top_p .3 keeps
// the first 301 ids in id order (cumulative before id j is j/1000; dropped once it exceeds .3).
TEST(DreamRow, TopPFlatRowUsesFullOrder) {
  std::vector<float> lf(1000, 0.5f);
  std::vector<double> probs;
  std::vector<int32_t> order;
  dream_probs(lf, all_allowed(1000), 0.0, 0.3, 0, probs, order, dllm::best_isa());
  int kept = 0;
  for (size_t i = 0; i < probs.size(); ++i) kept += probs[i] > 0;
  // cumulative before id j is j/1000 (rounded): ids 0..300 have <= .3 before them (id 300: .3,
  // up to rounding either way), so 300 or 301 stay, all at the low ids.
  EXPECT_TRUE(kept == 300 || kept == 301) << kept;
  for (int i = 0; i < kept; ++i) EXPECT_GT(probs[i], 0.0);
}

// top_k_logits: drop logits below the k-th largest; ties with it stay.
TEST(DreamRow, TopKByHand) {
  const std::vector<float> lf = {2, 1, 0, -1, 3};
  std::vector<double> probs;
  std::vector<int32_t> order;
  dream_probs(lf, all_allowed(5), 0.0, 1.0, 2, probs, order, dllm::best_isa());
  const double z = std::exp(3.0) + std::exp(2.0);
  EXPECT_NEAR(probs[4], std::exp(3.0) / z, 1e-12);
  EXPECT_NEAR(probs[0], std::exp(2.0) / z, 1e-12);
  EXPECT_EQ(probs[1] + probs[2] + probs[3], 0.0);
  const std::vector<float> ties = {1, 1, 0};
  dream_probs(ties, all_allowed(3), 0.0, 1.0, 1, probs, order, dllm::best_isa());
  EXPECT_NEAR(probs[0], 0.5, 1e-12);
  EXPECT_NEAR(probs[1], 0.5, 1e-12);
  EXPECT_EQ(probs[2], 0.0);
  // top_k larger than the vocabulary is clamped (torch: min(top_k, vocab)).
  dream_probs(lf, all_allowed(5), 0.0, 1.0, 99, probs, order, dllm::best_isa());
  EXPECT_GT(probs[3], 0.0);
}

// sample_tokens' confidences on hand-made distributions.
TEST(DreamRow, ConfidenceKinds) {
  std::vector<double> probs;
  std::vector<int32_t> order;
  const std::vector<double> p = {0.6, 0.2, 0.15, 0.05};
  std::vector<float> lf;
  for (double v : p) lf.push_back(static_cast<float>(std::log(v)));
  const auto allowed = all_allowed(4);
  const RowChoice a =
      dream_row(lf, allowed, 0.0, 1.0, 0, DreamConfidence::kProb, nullptr, probs, order, dllm::best_isa());
  EXPECT_EQ(a.token, 0);
  EXPECT_NEAR(a.confidence, 0.6, 1e-6);
  const RowChoice b =
      dream_row(lf, allowed, 0.0, 1.0, 0, DreamConfidence::kMargin, nullptr, probs, order, dllm::best_isa());
  EXPECT_NEAR(b.confidence, 0.6 - 0.2, 1e-6);
  const RowChoice c = dream_row(lf, allowed, 0.0, 1.0, 0, DreamConfidence::kNegEntropy, nullptr, probs, order,
                                dllm::best_isa());
  double neg_h = 0;
  for (double v : p) neg_h += v * std::log(v + 1e-10);
  EXPECT_NEAR(c.confidence, neg_h, 1e-6);
  EXPECT_LT(c.confidence, 0.0);  // negative entropy: the most certain row has the LARGEST value
}

// Categorical sampling at temperature T from the filtered softmax(l / T).
TEST(DreamRow, CategoricalFrequencies) {
  const std::vector<float> lf = {1.0f, 0.0f, -1.0f, 0.5f};
  const std::vector<double> l(lf.begin(), lf.end());
  std::vector<double> probs;
  std::vector<int32_t> order;
  const int64_t n = 200000;
  std::vector<int64_t> counts(4, 0);
  for (int64_t i = 0; i < n; ++i) {
    Rng g = Rng::stream(9, RngPurpose::kCategorical, i, 0);
    const RowChoice c = dream_row(lf, all_allowed(4), 0.8, 1.0, 0, DreamConfidence::kProb, &g, probs, order,
                                  dllm::best_isa());
    counts[c.token]++;
    ASSERT_NEAR(c.confidence, softmax(l, 0.8)[c.token], 1e-12);
  }
  EXPECT_LT(chi_square(counts, softmax(l, 0.8), n), 16.27);
  // With top_k = 2 only ids 0 and 3 can come out.
  counts.assign(4, 0);
  for (int64_t i = 0; i < 20000; ++i) {
    Rng g = Rng::stream(9, RngPurpose::kCategorical, i, 1);
    counts[dream_row(lf, all_allowed(4), 0.8, 1.0, 2, DreamConfidence::kProb, &g, probs, order,
                     dllm::best_isa())
               .token]++;
  }
  EXPECT_EQ(counts[1] + counts[2], 0);
}

TEST(DreamRow, DisallowedNeverSampled) {
  const std::vector<float> lf = {0.0f, 40.0f, 0.5f, 40.0f, 0.2f};
  const std::vector<uint8_t> allowed = {1, 0, 1, 0, 1};
  std::vector<double> probs;
  std::vector<int32_t> order;
  for (int i = 0; i < 2000; ++i) {
    Rng g = Rng::stream(5, RngPurpose::kCategorical, i, 0);
    const RowChoice c = dream_row(lf, allowed, i % 3 ? 1.5 : 0.0, i % 2 ? 0.95 : 1.0, i % 5,
                                  DreamConfidence::kProb, &g, probs, order, dllm::best_isa());
    ASSERT_TRUE(c.token == 0 || c.token == 2 || c.token == 4) << c.token;
  }
}

// The RNG: uniform_open stays in (0, 1) and has the right mean; streams with different keys differ.
TEST(Rng, UniformAndStreams) {
  Rng r(123);
  double s = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform_open();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    s += u;
  }
  EXPECT_NEAR(s / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NE(Rng::stream(1, RngPurpose::kGumbel, 0, 0).next(),
            Rng::stream(1, RngPurpose::kGumbel, 0, 1).next());
  EXPECT_NE(Rng::stream(1, RngPurpose::kGumbel, 0, 0).next(),
            Rng::stream(1, RngPurpose::kGumbel, 1, 0).next());
  EXPECT_NE(Rng::stream(1, RngPurpose::kGumbel, 0, 0).next(),
            Rng::stream(2, RngPurpose::kGumbel, 0, 0).next());
  EXPECT_EQ(Rng::stream(1, RngPurpose::kGumbel, 5, 6).next(),
            Rng::stream(1, RngPurpose::kGumbel, 5, 6).next());
}
