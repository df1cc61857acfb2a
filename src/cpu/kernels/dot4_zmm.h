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

// The eight lane sums of token h (0: low half, 1: high) in acc_j, the tail t in [i, n) added into lane
// 0 unfused, then dot_f32's reduction tree: out = dot_f32(a_j, b_h, n).
inline float finish_dot_f32_zmm(const __m512& acc_j, int h, const float* a_j, const float* b_h, int64_t i,
                                int64_t n) {
  alignas(64) float l[16];
  _mm512_store_ps(l, acc_j);
  float* lh = l + 8 * h;
  for (int64_t t = i; t < n; ++t) {
    float p = a_j[t] * b_h[t];
    keep(p);
    lh[0] += p;
  }
  return ((lh[0] + lh[4]) + (lh[1] + lh[5])) + ((lh[2] + lh[6]) + (lh[3] + lh[7]));
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
  for (int j = 0; j < 4; ++j) {
    out[j] = finish_dot_f32_zmm(acc[j], 0, a[j], b0, i, n);
    out[4 + j] = finish_dot_f32_zmm(acc[j], 1, a[j], b1, i, n);
  }
}

// Four tokens per pass: out[4 t + j] = dot_f32(a[j], b[t], n), each lane's adds in dot_f32_x4x2_zmm's
// order (so the same bits), with eight independent add chains where x4x2 has four (an add's latency
// is 4 cycles on Intel cores, 3 on Zen 4). On LLaDA2's 32-row block step it measured the same as x4x2
// (bench/results/llada2-router-x4x4-ab-20261205T115051Z.json): there the loads bound it.
inline void dot_f32_x4x4_zmm(const float* const a[4], const float* const b[4], int64_t n, float out[16]) {
  __m512 acc[2][4];
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < 4; ++j) acc[h][j] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512 vb[2] = {
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(b[0] + i)), _mm256_loadu_ps(b[1] + i), 1),
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(b[2] + i)), _mm256_loadu_ps(b[3] + i), 1)};
    for (int j = 0; j < 4; ++j) {
      const __m512 aj = _mm512_broadcast_f32x8(_mm256_loadu_ps(a[j] + i));
      for (int h = 0; h < 2; ++h) {
        __m512 p = _mm512_mul_ps(aj, vb[h]);
        keep(p);
        acc[h][j] = _mm512_add_ps(acc[h][j], p);
      }
    }
  }
  for (int t = 0; t < 4; ++t) {
    for (int j = 0; j < 4; ++j) out[4 * t + j] = finish_dot_f32_zmm(acc[t / 2][j], t % 2, a[j], b[t], i, n);
  }
}

}  // namespace
}  // namespace dllm::cpu::simd
