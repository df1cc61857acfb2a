// Dream's row passes (diffusion/dream_passes.h) and the filters built on them (dream_probs,
// dream_row), each implementation against computations written here from the formulas in long
// double: the AVX2 exp and log against expl / logl in ulp, every pass against its loop, and
// top_p / top_k / softmax / confidence against the definition of Dream's sample_tokens: sort the
// whole row descending, cumulative softmax in order, drop what follows a prefix above top_p, keep
// the ids at or above the k-th largest, softmax again.
#include "diffusion/dream_passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "diffusion/row_ops.h"

using namespace dllm::diffusion;

namespace {

constexpr double kU = std::numeric_limits<double>::epsilon() / 2;  // unit roundoff, 2^-53

/// |got - want| in units of the last place of want (as a double).
double ulps(double got, long double want) {
  const double w = static_cast<double>(want);
  const double ulp = std::nextafter(std::fabs(w), std::numeric_limits<double>::infinity()) - std::fabs(w);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}

std::vector<const DreamPasses*> implementations() {
  std::vector<const DreamPasses*> v = {&dream_passes_portable()};
  if (dllm::isa_supported(dllm::Isa::kAvx2)) v.push_back(&dream_passes_avx2());
  return v;
}

#define SKIP_WITHOUT_AVX2()                   \
  if (!dllm::isa_supported(dllm::Isa::kAvx2)) \
  GTEST_SKIP() << "no AVX2 + FMA on this CPU: the avx2 passes cannot run"

struct Row {
  std::vector<float> logits;
  std::vector<uint8_t> allowed;
};

/// n logits ~ N(0, sigma) (all 0 when sigma is 0), ~3% disallowed (the row's largest value among them, so
/// that ignoring `allowed` shows), rounded to steps of `step` when step > 0 (many ties).
Row make_row(size_t n, double sigma, double step, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> nd(0.0, sigma > 0 ? sigma : 1.0);
  Row r{std::vector<float>(n), std::vector<uint8_t>(n, 1)};
  for (size_t i = 0; i < n; ++i) {
    double x = sigma > 0 ? nd(gen) : 0.0;
    if (step > 0) x = std::round(x / step) * step;
    r.logits[i] = static_cast<float>(x);
    if (n > 4 && gen() % 32 == 0) r.allowed[i] = 0;
  }
  if (n > 4) {
    r.logits[n / 3] = static_cast<float>(10 * sigma + 1);
    r.allowed[n / 3] = 0;
  }
  return r;
}

double scaled(float l, double t) {
  return t > 0 ? static_cast<double>(l) / t : static_cast<double>(l);
}

/// Dream's sample_tokens distribution by its definition, in long double: the ids kept and their
/// probabilities (0 for the others).
std::vector<long double> reference_probs(const Row& r, double t, double top_p, int64_t top_k) {
  const size_t n = r.logits.size();
  std::vector<int32_t> ids;
  for (size_t i = 0; i < n; ++i)
    if (r.allowed[i]) ids.push_back(static_cast<int32_t>(i));
  const auto v = [&](int32_t i) { return scaled(r.logits[i], t); };
  std::sort(ids.begin(), ids.end(),
            [&](int32_t a, int32_t b) { return v(a) > v(b) || (v(a) == v(b) && a < b); });
  const long double m = v(ids[0]);
  long double z = 0;
  for (int32_t i : ids) z += expl(v(i) - m);
  size_t keep = ids.size();
  if (top_p < 1.0) {
    // torch: cumsum(softmax(sorted)) > top_p, shifted right by one, the first always kept.
    long double cum = 0;
    for (size_t j = 0; j < ids.size(); ++j) {
      cum += expl(v(ids[j]) - m) / z;
      if (cum > top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  ids.resize(keep);
  if (top_k > 0 && static_cast<size_t>(top_k) < ids.size()) {
    const double kth = v(ids[static_cast<size_t>(top_k) - 1]);
    while (v(ids.back()) < kth) ids.pop_back();
  }
  std::vector<long double> p(n, 0);
  long double zk = 0;
  for (int32_t i : ids) zk += expl(v(i) - m);
  for (int32_t i : ids) p[i] = expl(v(i) - m) / zk;
  return p;
}

// ---- the elementary functions ----

TEST(DreamPasses, Avx2ExpWithinFourUlp) {
  SKIP_WITHOUT_AVX2();
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> wide(-708.0, 0.0), near0(-1.0, 0.0);
  std::vector<double> x(400000), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? wide(gen) : near0(gen);
  x[0] = 0.0, x[1] = -708.0, x[2] = -1e-300;
  exp_avx2(x.data(), y.data(), x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, ulps(y[i], expl(static_cast<long double>(x[i]))));
  EXPECT_LE(worst, 4.0);
  const double out[3] = {-709.0, -std::numeric_limits<double>::infinity(), std::nan("")};
  double got[3];
  exp_avx2(out, got, 3);
  for (double g : got) EXPECT_EQ(g, 0.0);
}

TEST(DreamPasses, Avx2LogWithinFourUlp) {
  SKIP_WITHOUT_AVX2();
  std::mt19937_64 gen(2);
  // p + 1e-10 for p in [0, 1]: log-uniform over (1e-10, 1], and densely near 1 and near sqrt(2)/2,
  // where the reduction switches.
  std::uniform_real_distribution<double> lu(std::log(1e-10), 0.0), near(-1e-3, 1e-3);
  std::vector<double> x(400000), y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = i % 3 == 0 ? std::exp(lu(gen)) : i % 3 == 1 ? 1.0 + near(gen) : std::sqrt(0.5) + near(gen);
  x[0] = 1.0, x[1] = 1e-10, x[2] = 1.0 + 1e-10;
  log_avx2(x.data(), y.data(), x.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, ulps(y[i], logl(static_cast<long double>(x[i]))));
  EXPECT_LE(worst, 4.0);
}

// ---- each pass against its loop ----

TEST(DreamPasses, ExpShiftedSumAndHistogram) {
  for (const DreamPasses* p : implementations()) {
    for (size_t n : {1u, 3u, 4u, 5u, 17u, 1000u, 152064u}) {
      for (double t : {0.0, 0.2, 1.7}) {
        const Row r = make_row(n, 3.0, 0.0, static_cast<uint32_t>(n));
        double m = -std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < n; ++i)
          if (r.allowed[i]) m = std::max(m, scaled(r.logits[i], t));
        std::vector<double> e(n, -1.0), mass(kDreamBuckets, 0.0);
        std::vector<uint16_t> bucket(n, 7);
        std::vector<uint32_t> count(kDreamBuckets, 0);
        const double z = p->exp_shifted(r.logits.data(), r.allowed.data(), n, t, m, e.data(), bucket.data(),
                                        mass.data(), count.data());
        const std::string where =
            std::string(p->name) + " n " + std::to_string(n) + " T " + std::to_string(t);
        long double zr = 0;
        std::vector<long double> mass_r(kDreamBuckets, 0);
        std::vector<uint32_t> count_r(kDreamBuckets, 0);
        std::vector<int32_t> ids;
        for (size_t i = 0; i < n; ++i) {
          if (!r.allowed[i]) {
            EXPECT_EQ(e[i], 0.0) << where;
            EXPECT_EQ(bucket[i], kNoBucket) << where;
            continue;
          }
          ids.push_back(static_cast<int32_t>(i));
          const double v = scaled(r.logits[i], t);
          const long double want = expl(static_cast<long double>(v - m));
          ASSERT_LE(ulps(e[i], want), 4.0) << where << " id " << i;
          zr += want;
          // The bucket holds v in (m - (b+1)/64, m - b/64], the last one everything below.
          const int b = bucket[i];
          ASSERT_LT(b, kDreamBuckets) << where;
          const long double d = (static_cast<long double>(m) - v) * kDreamBucketsPerUnit;
          EXPECT_GE(d, b - 1e-9L) << where << " id " << i;
          if (b < kDreamBuckets - 1) {
            EXPECT_LT(d, b + 1 + 1e-9L) << where << " id " << i;
          }
          mass_r[b] += e[i];
          count_r[b] += 1;
        }
        EXPECT_NEAR(z, static_cast<double>(zr), (n + 8) * kU * static_cast<double>(zr)) << where;
        for (int b = 0; b < kDreamBuckets; ++b) {
          EXPECT_EQ(count[b], count_r[b]) << where << " bucket " << b;
          EXPECT_NEAR(mass[b], static_cast<double>(mass_r[b]), (n + 8) * kU * static_cast<double>(mass_r[b]));
        }
        // Descending v never goes to an earlier bucket.
        std::sort(ids.begin(), ids.end(),
                  [&](int32_t a, int32_t b) { return scaled(r.logits[a], t) > scaled(r.logits[b], t); });
        for (size_t j = 1; j < ids.size(); ++j) ASSERT_LE(bucket[ids[j - 1]], bucket[ids[j]]) << where;
        // No count array (top_p alone): the same buckets and masses.
        std::vector<double> e3(n), mass3(kDreamBuckets, 0.0);
        std::vector<uint16_t> bucket3(n);
        EXPECT_EQ(p->exp_shifted(r.logits.data(), r.allowed.data(), n, t, m, e3.data(), bucket3.data(),
                                 mass3.data(), nullptr),
                  z)
            << where;
        EXPECT_EQ(bucket3, bucket) << where;
        EXPECT_EQ(mass3, mass) << where;
        // No bucket array: the same e and sum, nothing else written.
        std::vector<double> e2(n);
        const double z2 =
            p->exp_shifted(r.logits.data(), r.allowed.data(), n, t, m, e2.data(), nullptr, nullptr, nullptr);
        EXPECT_EQ(z2, z) << where;
        EXPECT_EQ(e2, e) << where;
      }
    }
  }
}

TEST(DreamPasses, KeepThroughFindBucketFinish) {
  std::mt19937 gen(3);
  for (const DreamPasses* p : implementations()) {
    for (size_t n : {1u, 2u, 15u, 16u, 17u, 33u, 152064u}) {
      const std::string where = std::string(p->name) + " n " + std::to_string(n);
      std::vector<double> e(n);
      std::vector<uint16_t> bucket(n);
      for (size_t i = 0; i < n; ++i) {
        bucket[i] = gen() % 16 == 0 ? kNoBucket : static_cast<uint16_t>(gen() % 40);
        e[i] = bucket[i] == kNoBucket
                   ? 0.0
                   : std::ldexp(1.0 + (gen() % 1000) / 1000.0, -static_cast<int>(gen() % 30));
      }
      // find_bucket: the ids of one bucket, increasing.
      for (uint16_t b : {uint16_t(0), uint16_t(7), uint16_t(39), kNoBucket}) {
        std::vector<int32_t> want, got(n);
        for (size_t i = 0; i < n; ++i)
          if (bucket[i] == b) want.push_back(static_cast<int32_t>(i));
        got.resize(p->find_bucket(bucket.data(), n, b, got.data()));
        EXPECT_EQ(got, want) << where << " bucket " << b;
      }
      // keep_through: buckets above the cut go, the sum of the rest. Cut 2 leaves long runs of
      // zeros (what normalize skips 16 at a time).
      for (const int cut : {20, 2}) {
        std::vector<double> e1 = e;
        std::vector<uint16_t> b1 = bucket;
        const double s = p->keep_through(e1.data(), b1.data(), n, cut);
        long double sr = 0;
        for (size_t i = 0; i < n; ++i) {
          const bool keep = bucket[i] <= cut;
          EXPECT_EQ(e1[i], keep ? e[i] : 0.0) << where;
          EXPECT_EQ(b1[i], keep ? bucket[i] : kNoBucket) << where;
          if (keep) sr += e[i];
        }
        EXPECT_NEAR(s, static_cast<double>(sr), (n + 8) * kU * static_cast<double>(sr)) << where;
        // finish: p = e / z (the portable one divides, the AVX2 one multiplies by 1 / z: within 1
        // ulp); the entropy sum p log(p + 1e-10), p + 1e-10 rounded to f64 as the formula writes it, the
        // log and the sum in long double. Bound: (n + 8) ulp of the terms' sizes, plus as much of the
        // sum of p for an ulp in p itself (d(p log p)/dp = 1 + log p, and p |log p| is a term's size).
        // The draw is the first id whose cumulative p (long double) passes u, away from rounding.
        if (sr > 0) {
          std::vector<double> q = e1;
          const RowEnd plain = p->finish(q.data(), nullptr, n, cut, s, false, 0.0);
          EXPECT_EQ(plain.neg_entropy, 0.0) << where;
          EXPECT_EQ(plain.draw, -1) << where;
          long double hr = 0, size = 0;
          for (size_t i = 0; i < n; ++i) {
            const double want = e1[i] / s;
            if (p->kept_mass_from_buckets) {
              ASSERT_LE(std::fabs(q[i] - want), std::nextafter(want, 2.0) - want) << where << " id " << i;
            } else {
              ASSERT_EQ(q[i], want) << where << " id " << i;
            }
            if (want == 0) continue;
            const long double term = want * logl(static_cast<long double>(want + 1e-10));
            hr += term;
            size += fabsl(term) + want;
          }
          // Dropping by bucket inside finish gives what keep_through then finish gives.
          for (const double u : {0.3, 0.999}) {
            std::vector<double> q2 = e, q3 = e1;
            const RowEnd by_bucket = p->finish(q2.data(), bucket.data(), n, cut, s, true, u);
            const RowEnd after_keep = p->finish(q3.data(), nullptr, n, cut, s, true, u);
            EXPECT_EQ(q2, q3) << where;
            EXPECT_EQ(by_bucket.neg_entropy, after_keep.neg_entropy) << where;
            EXPECT_EQ(by_bucket.draw, after_keep.draw) << where;
            EXPECT_NEAR(by_bucket.neg_entropy, static_cast<double>(hr),
                        (n + 8) * kU * static_cast<double>(size))
                << where;
            long double cum = 0;
            int32_t want_draw = -1;
            bool near_edge = false;
            for (size_t i = 0; i < n && want_draw < 0; ++i) {
              cum += static_cast<long double>(e1[i]) / s;
              if (e1[i] > 0 && fabsl(cum - u) < 1e-12L) near_edge = true;
              if (cum > u) want_draw = static_cast<int32_t>(i);
            }
            if (!near_edge) {
              EXPECT_EQ(by_bucket.draw, want_draw) << where << " u " << u;
            }
          }
        }
      }
    }
  }
}

TEST(DreamPasses, MaxAllowed) {
  for (const DreamPasses* p : implementations()) {
    for (size_t n : {1u, 7u, 8u, 9u, 31u, 152064u}) {
      Row r = make_row(n, 2.0, 0.0, static_cast<uint32_t>(7 * n));
      if (n > 8) r.logits[5] = std::numeric_limits<float>::quiet_NaN();
      float want = -std::numeric_limits<float>::infinity();
      for (size_t i = 0; i < n; ++i)
        if (r.allowed[i] && !std::isnan(r.logits[i]) && r.logits[i] > want) want = r.logits[i];
      EXPECT_EQ(p->max_allowed(r.logits.data(), r.allowed.data(), n), want) << p->name << " n " << n;
      std::vector<uint8_t> none(n, 0);
      EXPECT_EQ(p->max_allowed(r.logits.data(), none.data(), n), -std::numeric_limits<float>::infinity());
    }
  }
}

// --isa scalar must run no SIMD code in the sampler either: SamplerParams::isa picks the passes.
TEST(DreamPasses, IsaPicksThePasses) {
  using dllm::Isa;
  EXPECT_EQ(&dream_passes(Isa::kScalar), &dream_passes_portable());
  for (const Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni})
    EXPECT_EQ(&dream_passes(isa), &dream_passes_avx2()) << dllm::isa_name(isa);
  EXPECT_STREQ(dream_passes(Isa::kScalar).name, "portable");
  EXPECT_STREQ(dream_passes_avx2().name, "avx2");
}

// ---- the filters against their definition ----

struct FilterCase {
  size_t n;
  double sigma, step, t, top_p;
  int64_t top_k;
};

TEST(DreamProbs, TopPTopKSoftmaxMatchTheSortedDefinition) {
  // Flat rows like the tiny random model's (top_p keeps half the vocabulary), sharp rows like a
  // trained model's at T = 0.2 (a handful kept), ties, a row of equal logits (one bucket holds all;
  // top_p x ids not a whole number, so no prefix mass sits exactly on top_p), and short rows.
  const std::vector<FilterCase> cases = {
      {152064, 0.32, 0, 0.2, 0.95, 0},  {152064, 0.32, 0, 1.0, 0.9, 0},     {152064, 3.0, 0, 0.2, 0.95, 0},
      {152064, 3.0, 0, 0.0, 0.5, 0},    {152064, 1.0, 0.25, 1.0, 0.9, 0},   {152064, 1.0, 0.25, 0.0, 1.0, 7},
      {152064, 0.32, 0, 0.2, 0.95, 50}, {152064, 3.0, 0, 0.6, 0.999, 1000}, {152064, 0.5, 0, 1.0, 1.0, 20000},
      {1, 1.0, 0, 0.2, 0.95, 0},        {5, 1.0, 0, 0.2, 0.3, 2},           {37, 0.1, 0.1, 1.0, 0.9, 3},
      {1000, 2.0, 0, 0.2, 0.95, 1},     {1000, 0.0, 0, 1.0, 0.45, 0},       {4099, 1.0, 0, 1.0, 0.999999, 0},
  };
  std::vector<double> probs;
  std::vector<int32_t> order;
  for (const DreamPasses* p : implementations()) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const FilterCase& fc = cases[c];
      const Row r = make_row(fc.n, fc.sigma, fc.step, static_cast<uint32_t>(100 + c));
      const std::vector<long double> want = reference_probs(r, fc.t, fc.top_p, fc.top_k);
      dream_probs(r.logits, r.allowed, fc.t, fc.top_p, fc.top_k, probs, order, *p);
      const std::string where = std::string(p->name) + " case " + std::to_string(c);
      ASSERT_EQ(probs.size(), fc.n) << where;
      size_t kept = 0, kept_ref = 0;
      for (size_t i = 0; i < fc.n; ++i) {
        kept += probs[i] > 0;
        kept_ref += want[i] > 0;
        // The same ids survive; each probability to the error of an f64 sum of n terms.
        ASSERT_EQ(probs[i] > 0, want[i] > 0) << where << " id " << i;
        ASSERT_NEAR(probs[i], static_cast<double>(want[i]), (fc.n + 16) * kU * static_cast<double>(want[i]))
            << where << " id " << i;
      }
      EXPECT_EQ(kept, kept_ref) << where;
    }
  }
}

TEST(DreamRow, ConfidencesMatchTheDefinitionOnVocabularyRows) {
  std::vector<double> probs;
  std::vector<int32_t> order;
  for (const DreamPasses* p : implementations()) {
    for (uint32_t seed = 0; seed < 6; ++seed) {
      const Row r = make_row(152064, seed % 2 ? 0.32 : 3.0, 0.0, 200 + seed);
      const double t = seed % 3 == 0 ? 0.0 : 0.2, top_p = seed % 2 ? 0.95 : 1.0;
      const std::vector<long double> want = reference_probs(r, t, top_p, 0);
      const std::string where = std::string(p->name) + " seed " + std::to_string(seed);
      long double h = 0, size = 0, top1 = 0, top2 = 0;
      for (long double q : want) {
        // p + 1e-10 in f64, as the formula writes it.
        const long double term =
            q > 0 ? q * logl(static_cast<long double>(static_cast<double>(q) + 1e-10)) : 0;
        h += term;
        size += fabsl(term) + q;  // as in KeepThroughFindBucketFinish: an ulp in p
        if (q > top1) {
          top2 = top1;
          top1 = q;
        } else if (q > top2) {
          top2 = q;
        }
      }
      Rng g = Rng::stream(seed, RngPurpose::kCategorical, 0, 0);
      const RowChoice e =
          dream_row(r.logits, r.allowed, t, top_p, 0, DreamConfidence::kNegEntropy, &g, probs, order, *p);
      EXPECT_NEAR(e.confidence, static_cast<double>(h), 152080 * kU * std::fabs(static_cast<double>(h)))
          << where;
      ASSERT_GE(e.token, 0);
      EXPECT_GT(want[e.token], 0) << where;
      g = Rng::stream(seed, RngPurpose::kCategorical, 0, 0);
      const RowChoice pr =
          dream_row(r.logits, r.allowed, t, top_p, 0, DreamConfidence::kProb, &g, probs, order, *p);
      EXPECT_EQ(pr.token, e.token) << where << ": the confidence kind must not change the draw";
      EXPECT_NEAR(pr.confidence, static_cast<double>(want[pr.token]),
                  152080 * kU * static_cast<double>(want[pr.token]));
      const RowChoice mg =
          dream_row(r.logits, r.allowed, t, top_p, 0, DreamConfidence::kMargin, &g, probs, order, *p);
      EXPECT_NEAR(mg.confidence, static_cast<double>(top1 - top2), 152080 * kU * static_cast<double>(top1))
          << where;
      if (t == 0) {
        // Greedy: the first allowed id with the largest logit.
        size_t best = 0;
        while (!r.allowed[best]) ++best;
        for (size_t i = 0; i < r.logits.size(); ++i)
          if (r.allowed[i] && r.logits[i] > r.logits[best]) best = i;
        EXPECT_EQ(e.token, static_cast<int32_t>(best)) << where;
      }
    }
  }
}

// The inverse-CDF draw of a filtered row on a fixed grid of uniforms: the token is the first id whose
// cumulative reference probability passes u (away from rounding: u not within 1e-9 of a boundary).
TEST(DreamRow, CategoricalDrawIsTheInverseCdf) {
  const Row r = make_row(152064, 0.32, 0.0, 300);
  const std::vector<long double> want = reference_probs(r, 0.2, 0.95, 0);
  std::vector<double> probs;
  std::vector<int32_t> order;
  for (const DreamPasses* p : implementations()) {
    for (uint64_t step = 0; step < 40; ++step) {
      Rng g = Rng::stream(7, RngPurpose::kCategorical, step, 0);
      Rng copy = g;
      const double u = copy.uniform_open();
      long double acc = 0;
      int32_t expect = -1;
      bool near_edge = false;
      for (size_t i = 0; i < want.size(); ++i) {
        acc += want[i];
        if (want[i] > 0 && fabsl(acc - u) < 1e-9L) near_edge = true;
        if (acc > u) {
          expect = static_cast<int32_t>(i);
          break;
        }
      }
      if (near_edge) continue;
      const RowChoice c =
          dream_row(r.logits, r.allowed, 0.2, 0.95, 0, DreamConfidence::kProb, &g, probs, order, *p);
      EXPECT_EQ(c.token, expect) << p->name << " step " << step;
    }
  }
}

}  // namespace
