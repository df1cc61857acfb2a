// moe_route_row_sigmoid (cpu/moe.h) against the routing worked in f64 from its formula (llama.cpp
// build_moe_ffn with sigmoid gating, exp_probs_b and expert groups; HF LLaDA2MoeGate): scores
// s = sigmoid(W x), biased b = s + bias for the choice, each group ranked by the sum of its two best
// b, the best groups kept and the rest -inf, the top-k of b among them, weights = the chosen s
// normalised, times the scale. Random routers with biases of both signs, including all-negative
// biased scores (where masking the dropped groups to 0 instead of -inf would pick them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "cpu/moe.h"

namespace dllm {
namespace {

struct F64Routing {
  std::vector<int32_t> expert;  ///< by descending biased score
  std::vector<double> weight;
};

F64Routing route_f64(const std::vector<float>& router, const std::vector<float>& x,
                     const std::vector<float>& bias, int64_t E, int64_t d, int64_t groups,
                     int64_t groups_used, int64_t k, bool norm, double scale) {
  std::vector<double> s(E), b(E);
  for (int64_t e = 0; e < E; ++e) {
    double l = 0;
    for (int64_t i = 0; i < d; ++i) l += double(router[e * d + i]) * x[i];
    s[e] = 1.0 / (1.0 + std::exp(-l));
    b[e] = s[e] + bias[e];
  }
  const int64_t per = E / groups;
  std::vector<double> gscore(groups);
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<double> v(b.begin() + g * per, b.begin() + (g + 1) * per);
    std::sort(v.rbegin(), v.rend());
    gscore[g] = v[0] + v[1];
  }
  std::vector<int64_t> gorder(groups);
  std::iota(gorder.begin(), gorder.end(), 0);
  std::stable_sort(gorder.begin(), gorder.end(), [&](int64_t a, int64_t c) { return gscore[a] > gscore[c]; });
  std::vector<bool> kept(groups, false);
  for (int64_t j = 0; j < groups_used; ++j) kept[gorder[j]] = true;
  for (int64_t e = 0; e < E; ++e)
    if (!kept[e / per]) b[e] = -INFINITY;
  std::vector<int32_t> order(E);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t c) { return b[a] > b[c]; });
  F64Routing r;
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    r.expert.push_back(order[j]);
    r.weight.push_back(s[order[j]]);
    sum += s[order[j]];
  }
  for (double& w : r.weight) w = (norm ? w / sum : w) * scale;
  return r;
}

void check(uint32_t seed, float bias_mean, float bias_spread) {
  const int64_t E = 16, d = 64, groups = 4, groups_used = 2, k = 4;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> router(E * d), x(d), bias(E);
  for (float& v : router) v = 0.2f * nd(rng);
  for (float& v : x) v = nd(rng);
  for (float& v : bias) v = bias_mean + bias_spread * nd(rng);
  for (const bool norm : {true, false}) {
    const F64Routing want = route_f64(router, x, bias, E, d, groups, groups_used, k, norm, 2.5);
    std::vector<float> scores(E), biased(E), weight(k);
    std::vector<int32_t> expert(k);
    cpu::moe_route_row_sigmoid(router.data(), E, x.data(), d, bias.data(), groups, groups_used, k, norm, 2.5f,
                               scores.data(), biased.data(), expert.data(), weight.data());
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_EQ(expert[j], want.expert[j]) << "seed " << seed << " slot " << j;
      EXPECT_NEAR(weight[j], want.weight[j], 1e-5 * std::max(1.0, std::abs(want.weight[j])))
          << "seed " << seed << " slot " << j;
    }
  }
}

TEST(MoeSigmoidRouting, MatchesF64Formula) {
  for (uint32_t seed = 1; seed <= 40; ++seed) check(seed, 0.0f, 0.1f);
}

TEST(MoeSigmoidRouting, NegativeBiasedScoresDropGroupsToMinusInfinity) {
  // Every biased score below 0: a dropped group set to 0 would outrank the kept ones.
  for (uint32_t seed = 100; seed < 120; ++seed) check(seed, -3.0f, 0.2f);
}

TEST(MoeSigmoidRouting, NoBiasNoGroups) {
  // bias nullptr and one group: plain top-k of the sigmoid scores.
  const int64_t E = 8, d = 16, k = 2;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> router(E * d), x(d), zero(E, 0.0f);
  for (float& v : router) v = nd(rng);
  for (float& v : x) v = nd(rng);
  const F64Routing want = route_f64(router, x, zero, E, d, 1, 1, k, true, 1.0);
  std::vector<float> scores(E), biased(E), weight(k);
  std::vector<int32_t> expert(k);
  cpu::moe_route_row_sigmoid(router.data(), E, x.data(), d, nullptr, 0, 0, k, true, 1.0f, scores.data(),
                             biased.data(), expert.data(), weight.data());
  for (int64_t j = 0; j < k; ++j) {
    EXPECT_EQ(expert[j], want.expert[j]);
    EXPECT_NEAR(weight[j], want.weight[j], 1e-5);
  }
}

}  // namespace
}  // namespace dllm
