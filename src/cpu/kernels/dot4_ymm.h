// dot_f32 (cpu/ops.h) of four rows against one vector on ymm: the same eight lane sums, each product
// rounded to f32 before it is added (never fused), the same tail into lane 0 and the same reduction
// tree, so every result equals dot_f32's bit for bit; four independent chains hide the adds' latency.
// Included ONLY by row_kernels_avx2.cpp and row_kernels_avx512.cpp (anonymous namespace).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dllm::cpu::simd {
namespace {

// An empty asm with v as an in-out register operand: the optimizer cannot fuse the multiply that made
// v into the add that uses it (GCC contracts a * b + c into an FMA under -mfma otherwise).
inline void keep(__m256& v) {
  asm("" : "+x"(v));
}
inline void keep(float& v) {
  asm("" : "+x"(v));
}

inline void dot_f32_x4_ymm(const float* const a[4], const float* b, int64_t n, float out[4]) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vb = _mm256_loadu_ps(b + i);
    for (int j = 0; j < 4; ++j) {
      __m256 p = _mm256_mul_ps(_mm256_loadu_ps(a[j] + i), vb);
      keep(p);
      acc[j] = _mm256_add_ps(acc[j], p);
    }
  }
  for (int j = 0; j < 4; ++j) {
    alignas(32) float l[8];
    _mm256_store_ps(l, acc[j]);
    for (int64_t t = i; t < n; ++t) {
      float p = a[j][t] * b[t];
      keep(p);
      l[0] += p;
    }
    out[j] = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
  }
}

// Two vectors: dot_f32_x4_ymm of each (ymm has no room for both).
inline void dot_f32_x4x2_ymm(const float* const a[4], const float* b0, const float* b1, int64_t n,
                             float out[8]) {
  dot_f32_x4_ymm(a, b0, n, out);
  dot_f32_x4_ymm(a, b1, n, out + 4);
}

}  // namespace
}  // namespace dllm::cpu::simd
