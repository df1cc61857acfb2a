// dot_f32 (cpu/ops.h) of four rows against two vectors on zmm: the low 8 lanes carry the first vector's
// eight lane sums and the high 8 the second's, each row's 8 values broadcast to both halves, so every
// result is dot_f32's bit for bit (products rounded to f32 before they are added, never fused; the
// same tail into lane 0 and the same reduction tree) at twice the products per instruction of
// dot_f32_x4_ymm. Included ONLY by row_kernels_avx512.cpp (anonymous namespace).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/kernels/dot4_ymm.h"  // keep(float&)

namespace dllm::cpu::simd {
namespace {

// dot4_ymm.h's keep() for a zmm (any of the 32 registers).
inline void keep(__m512& v) {
  asm("" : "+v"(v));
}

inline void dot_f32_x4x2_zmm(const float* const a[4], const float* b0, const float* b1, int64_t n,
                             float out[8]) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512 vb =
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(b0 + i)), _mm256_loadu_ps(b1 + i), 1);
    for (int j = 0; j < 4; ++j) {
      __m512 p = _mm512_mul_ps(_mm512_broadcast_f32x8(_mm256_loadu_ps(a[j] + i)), vb);
      keep(p);
      acc[j] = _mm512_add_ps(acc[j], p);
    }
  }
  const float* const b[2] = {b0, b1};
  for (int j = 0; j < 4; ++j) {
    alignas(64) float l[16];
    _mm512_store_ps(l, acc[j]);
    for (int h = 0; h < 2; ++h) {
      float* lh = l + 8 * h;
      for (int64_t t = i; t < n; ++t) {
        float p = a[j][t] * b[h][t];
        keep(p);
        lh[0] += p;
      }
      out[4 * h + j] = ((lh[0] + lh[4]) + (lh[1] + lh[5])) + ((lh[2] + lh[6]) + (lh[3] + lh[7]));
    }
  }
}

}  // namespace
}  // namespace dllm::cpu::simd
