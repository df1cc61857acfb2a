// The portable Dream row passes and the choice of implementation (dream_passes.h).
#include "diffusion/dream_passes.h"

#include <cmath>
#include <limits>

#include "diffusion/row_sums.h"

namespace dllm::diffusion {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double exp_shifted_portable(const float* logits, const uint8_t* allowed, size_t n, double temperature,
                            double m, double* e, uint16_t* bucket, double* bucket_mass,
                            uint32_t* bucket_count) {
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (!allowed[i]) {
      e[i] = 0.0;
      if (bucket) bucket[i] = kNoBucket;
      continue;
    }
    const double v = temperature > 0.0 ? static_cast<double>(logits[i]) / temperature : logits[i];
    const double x = v == kNegInf ? 0.0 : std::exp(v - m);
    e[i] = x;
    z += x;
    if (bucket) {
      // NaN compares false and lands in the last bucket, as does anything 64 or more below m.
      const double d = (m - v) * kDreamBucketsPerUnit;
      const int b = d < kDreamBuckets - 1 ? static_cast<int>(d) : kDreamBuckets - 1;
      bucket[i] = static_cast<uint16_t>(b);
      bucket_mass[b] += x;
      if (bucket_count) bucket_count[b] += 1;
    }
  }
  return z;
}

double keep_through_portable(double* e, uint16_t* bucket, size_t n, int cut) {
  double s = 0.0;
  // Without a branch: which ids go is data (about half of a flat row). kNoBucket is above every cut
  // and those ids hold 0 already.
  for (size_t i = 0; i < n; ++i) {
    const bool drop = bucket[i] > cut;
    e[i] = drop ? 0.0 : e[i];
    bucket[i] = drop ? kNoBucket : bucket[i];
    s += e[i];
  }
  return s;
}

size_t find_bucket_portable(const uint16_t* bucket, size_t n, uint16_t b, int32_t* ids) {
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (bucket[i] == b) ids[k++] = static_cast<int32_t>(i);
  return k;
}

RowEnd finish_portable(double* e, const uint16_t* bucket, size_t n, int cut, double z, bool entropy,
                       double u) {
  // A zero stays 0 (0 / z), adds 0 to the running sum and -0.0 (0 * log(1e-10)) to the entropy,
  // neither of which changes a sum: skipping zeros is exact.
  RowEnd end;
  double acc = 0.0;
  const bool draw = u > 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (bucket && bucket[i] != kNoBucket && bucket[i] > cut) e[i] = 0.0;
    if (e[i] == 0.0) continue;
    e[i] /= z;
    if (entropy) end.neg_entropy += e[i] * std::log(e[i] + 1e-10);
    if (draw && end.draw < 0) {
      acc += e[i];
      if (acc > u) end.draw = static_cast<int32_t>(i);
    }
  }
  return end;
}

constexpr DreamPasses kPortable = {
    "portable",           false,           exp_shifted_portable, keep_through_portable,
    find_bucket_portable, finish_portable, max_allowed_scalar};

}  // namespace

const DreamPasses& dream_passes_portable() {
  return kPortable;
}

const DreamPasses& dream_passes(Isa isa) {
  return isa == Isa::kScalar ? dream_passes_portable() : dream_passes_avx2();
}

}  // namespace dllm::diffusion
