// The vocabulary-wide passes of LLaDA's greedy row (diffusion/row_sums.h), each path against loops
// written here: the largest allowed logit, and the softmax denominator with std::exp summed in long
// double. The rows hold what real rows can: disallowed ids, -inf, logits far below the top, NaN.
#include "diffusion/row_sums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "diffusion/row_ops.h"

using namespace dllm::diffusion;

namespace {

bool have_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
}

struct Row {
  std::vector<float> logits;
  std::vector<uint8_t> allowed;
};

// n logits ~ N(0, 4) (a few -inf, far-negative and NaN entries when `odd`), ~3% disallowed; the
// largest value sits on a disallowed id so that a kernel ignoring `allowed` picks it.
Row make_row(size_t n, uint32_t seed, bool odd) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  Row r{std::vector<float>(n), std::vector<uint8_t>(n, 1)};
  for (size_t i = 0; i < n; ++i) {
    r.logits[i] = nd(gen);
    if (gen() % 32 == 0) r.allowed[i] = 0;
    if (odd && gen() % 97 == 0) r.logits[i] = -std::numeric_limits<float>::infinity();
    if (odd && gen() % 89 == 0) r.logits[i] = -900.0f;
    if (odd && gen() % 101 == 0) r.logits[i] = std::numeric_limits<float>::quiet_NaN();
  }
  if (n > 2) {
    r.logits[n / 2] = 1000.0f;
    r.allowed[n / 2] = 0;
  }
  return r;
}

float max_ref(const Row& r) {
  float m = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < r.logits.size(); ++i) {
    if (r.allowed[i] && !std::isnan(r.logits[i]) && r.logits[i] > m) m = r.logits[i];
  }
  return m;
}

double sum_ref(const Row& r, double m) {
  long double z = 0;
  for (size_t i = 0; i < r.logits.size(); ++i) {
    const double x = double(r.logits[i]) - m;
    if (r.allowed[i] && !std::isnan(x) && x >= -708.0) z += std::exp(static_cast<long double>(x));
  }
  return double(z);
}

}  // namespace

TEST(RowSums, MaxAndSumMatchTheLoopsOnVocabularyRows) {
  for (bool odd : {false, true}) {
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const Row r = make_row(126464, seed, odd);
      const float m = max_ref(r);
      const double z = sum_ref(r, m);
      EXPECT_EQ(max_allowed_scalar(r.logits.data(), r.allowed.data(), r.logits.size()), m);
      EXPECT_NEAR(sum_exp_shifted_scalar(r.logits.data(), r.allowed.data(), r.logits.size(), m), z,
                  1e-12 * z);
      if (!have_avx512()) continue;
      EXPECT_EQ(max_allowed_avx512(r.logits.data(), r.allowed.data(), r.logits.size()), m);
      EXPECT_NEAR(sum_exp_shifted_avx512(r.logits.data(), r.allowed.data(), r.logits.size(), m), z,
                  1e-12 * z);
    }
  }
}

// Every tail length of the 16-lane loop, and the empty row.
TEST(RowSums, EveryLengthUpToThreeVectors) {
  for (size_t n = 0; n <= 48; ++n) {
    const Row r = make_row(n, uint32_t(100 + n), n % 2 == 1);
    const float m = max_ref(r);
    EXPECT_EQ(max_allowed(r.logits.data(), r.allowed.data(), n), m) << n;
    if (!std::isfinite(m)) continue;
    const double z = sum_ref(r, m);
    EXPECT_NEAR(sum_exp_shifted(r.logits.data(), r.allowed.data(), n, m), z, 1e-12 * z) << n;
    if (have_avx512()) {
      EXPECT_EQ(max_allowed_avx512(r.logits.data(), r.allowed.data(), n), m) << n;
      EXPECT_NEAR(sum_exp_shifted_avx512(r.logits.data(), r.allowed.data(), n, m), z, 1e-12 * z) << n;
    }
  }
}

// The polynomial exp on its own: single-term rows exp(x) for x across [-708, 0], to 4 ulp of std::exp.
TEST(RowSums, ExpOfOneTermWithinFourUlp) {
  if (!have_avx512()) GTEST_SKIP() << "no AVX-512F on this CPU";
  const uint8_t yes = 1;
  for (double x = -707.9; x <= 0.0; x += 0.37) {
    const float l = float(x);
    const double want = std::exp(double(l));
    const double got = sum_exp_shifted_avx512(&l, &yes, 1, 0.0);
    EXPECT_NEAR(got, want, 4 * std::numeric_limits<double>::epsilon() * want) << x;
  }
}

// llada_row at T = 0 on a vocabulary row: the first allowed id with the largest logit (ties to the
// lowest id), confidence = exp(l_x0 - max) / z from the loops above.
TEST(RowSums, GreedyLladaRowOnVocabularyRow) {
  Row r = make_row(126464, 7, false);
  const float m = max_ref(r);
  r.logits[90000] = m;  // a tie after the first maximum: the lower id must win
  size_t first = 0;
  while (!(r.allowed[first] && r.logits[first] == m)) ++first;
  const RowChoice c = llada_row(r.logits, r.allowed, 0.0, nullptr);
  EXPECT_EQ(c.token, int32_t(first));
  EXPECT_NEAR(c.confidence, 1.0 / sum_ref(r, m), 1e-12);
}
