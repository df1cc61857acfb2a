// The portable row sums and the choice of path (row_sums.h).
#include "diffusion/row_sums.h"

#include <cmath>
#include <limits>

namespace dllm::diffusion {

namespace {

// Once per process: the sums are pure functions, so either path gives the caller the same answer
// up to rounding (both within a few ulp of the exact sum). Every feature row_sums_avx512.cpp is
// compiled with (CMakeLists.txt's *_avx512.cpp flags) must be present, not just AVX-512F: the
// compiler may use any of them there, and the byte masks need BW and VL.
const bool kHaveAvx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                         __builtin_cpu_supports("avx512vnni");

}  // namespace

float max_allowed_scalar(const float* logits, const uint8_t* allowed, size_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) {
    if (allowed[i] && logits[i] > m) m = logits[i];
  }
  return m;
}

double sum_exp_shifted_scalar(const float* logits, const uint8_t* allowed, size_t n, double m) {
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(logits[i]) - m;
    if (allowed[i] && x >= -708.0) z += std::exp(x <= 0.0 ? x : 0.0);
  }
  return z;
}

float max_allowed(const float* logits, const uint8_t* allowed, size_t n) {
  return kHaveAvx512 ? max_allowed_avx512(logits, allowed, n) : max_allowed_scalar(logits, allowed, n);
}

double sum_exp_shifted(const float* logits, const uint8_t* allowed, size_t n, double m) {
  return kHaveAvx512 ? sum_exp_shifted_avx512(logits, allowed, n, m)
                     : sum_exp_shifted_scalar(logits, allowed, n, m);
}

}  // namespace dllm::diffusion
