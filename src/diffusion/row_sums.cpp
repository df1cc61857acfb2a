// The portable row sums and the choice of path (row_sums.h).
#include "diffusion/row_sums.h"

#include <cmath>
#include <limits>

namespace dllm::diffusion {

// kAvx512Vnni is supported only where the CPU and OS have every feature row_sums_avx512.cpp is
// compiled with (CMakeLists.txt's *_avx512.cpp flags: F, BW, VL, DQ, VNNI; base/isa.h); so is kAmx.
Isa row_sums_path(Isa isa) {
  return vector_isa(isa) == Isa::kAvx512Vnni ? Isa::kAvx512Vnni : Isa::kScalar;
}

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

float max_allowed(Isa isa, const float* logits, const uint8_t* allowed, size_t n) {
  return row_sums_path(isa) == Isa::kAvx512Vnni ? max_allowed_avx512(logits, allowed, n)
                                                : max_allowed_scalar(logits, allowed, n);
}

double sum_exp_shifted(Isa isa, const float* logits, const uint8_t* allowed, size_t n, double m) {
  return row_sums_path(isa) == Isa::kAvx512Vnni ? sum_exp_shifted_avx512(logits, allowed, n, m)
                                                : sum_exp_shifted_scalar(logits, allowed, n, m);
}

}  // namespace dllm::diffusion
