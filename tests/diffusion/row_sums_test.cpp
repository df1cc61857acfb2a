// The vocabulary-wide passes of LLaDA's greedy row (diffusion/row_sums.h), each path against loops
// written here: the largest allowed logit, and the softmax denominator with std::exp summed in long
// double. The rows hold what real rows can: disallowed ids, -inf, logits far below the top, NaN.
#include "diffusion/row_sums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "base/error.h"
#include "diffusion/row_ops.h"
#include "diffusion/sampler.h"

using namespace dllm::diffusion;
using dllm::Isa;

namespace {

bool have_avx512() {
  return dllm::isa_supported(Isa::kAvx512Vnni);
}

constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni};

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
    const Isa best = dllm::best_isa();
    EXPECT_EQ(max_allowed(best, r.logits.data(), r.allowed.data(), n), m) << n;
    if (!std::isfinite(m)) continue;
    const double z = sum_ref(r, m);
    EXPECT_NEAR(sum_exp_shifted(best, r.logits.data(), r.allowed.data(), n, m), z, 1e-12 * z) << n;
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
  const RowChoice c = llada_row(r.logits, r.allowed, 0.0, nullptr, dllm::best_isa());
  EXPECT_EQ(c.token, int32_t(first));
  EXPECT_NEAR(c.confidence, 1.0 / sum_ref(r, m), 1e-12);
}

// The sampler's kernel path follows the ISA it is given (SamplerParams::isa, from --isa): kScalar,
// kAvx2 and kAvxVnni run the portable loops and only kAvx512Vnni the AVX-512 ones. Told apart by
// their bits: the two paths add the softmax terms in different orders, so on a vocabulary row their
// sums differ in the last places, and llada_row's confidence carries the sum of the path that ran.
TEST(RowSums, LladaRowRunsThePathOfTheRequestedIsa) {
  const Row r = make_row(126464, 11, false);
  const float m = max_ref(r);
  const size_t n = r.logits.size();
  const RowChoice greedy = llada_row(r.logits, r.allowed, 0.0, nullptr, Isa::kScalar);
  ASSERT_GE(greedy.token, 0);
  const double num = std::exp(double(r.logits[size_t(greedy.token)]) - m);
  const double z_scalar = sum_exp_shifted_scalar(r.logits.data(), r.allowed.data(), n, m);
  for (const Isa isa : kAllIsas) {
    EXPECT_EQ(row_sums_path(isa), isa == Isa::kAvx512Vnni ? Isa::kAvx512Vnni : Isa::kScalar) << isa_name(isa);
    if (!dllm::isa_supported(isa)) {
      std::printf("skipped %s: this CPU/OS cannot run it\n", isa_name(isa));
      continue;
    }
    const RowChoice c = llada_row(r.logits, r.allowed, 0.0, nullptr, isa);
    EXPECT_EQ(c.token, greedy.token) << isa_name(isa);
    if (isa != Isa::kAvx512Vnni) {
      EXPECT_EQ(c.confidence, num / z_scalar) << isa_name(isa) << " must run the portable sums";
      continue;
    }
    const double z_avx512 = sum_exp_shifted_avx512(r.logits.data(), r.allowed.data(), n, m);
    EXPECT_EQ(c.confidence, num / z_avx512) << "avx512vnni must run the AVX-512 sums";
    if (z_avx512 == z_scalar) std::printf("note: both sums agree to the bit on this row\n");
  }
}

// A path the CPU cannot run is refused before any step (generate() would otherwise execute it).
TEST(RowSums, SamplerRefusesAnIsaThisCpuLacks) {
  Isa missing = Isa::kScalar;
  for (const Isa isa : kAllIsas)
    if (!dllm::isa_supported(isa)) missing = isa;
  if (missing == Isa::kScalar) GTEST_SKIP() << "this CPU runs every path";
  SamplerParams p;
  p.mask_id = 3;
  p.isa = missing;
  EXPECT_THROW(check_params(p, 4, 16), dllm::Error);
  p.isa = Isa::kScalar;
  EXPECT_NO_THROW(check_params(p, 4, 16));
}
