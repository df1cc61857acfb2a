// The panel GEMM kernels (cpu/kernels/panel_gemm_kernels.h) over a vector type V, shared by the AVX2
// and AVX-512 files, which instantiate them with their flags. V provides: F (W f32 lanes), load,
// store, set1, fmadd and round_f16 (F16C / AVX-512 conversions to binary16 and back, ties to even).
#pragma once

#include <algorithm>
#include <cstdint>

#include "cpu/kernels/panel_gemm_kernels.h"

namespace dllm::cpu::simd {

template <class V>
void round_f16(float* x, int64_t n) {
  constexpr int W = V::W;
  int64_t i = 0;
  for (; i + W <= n; i += W) V::store(x + i, V::round_f16(V::load(x + i)));
  if (i < n) {
    float t[W] = {};
    std::copy(x + i, x + n, t);
    V::store(t, V::round_f16(V::load(t)));
    std::copy(t, t + (n - i), x + i);
  }
}

template <class V>
void pack_b_row(const float* row, int64_t n, float* bp, int64_t ld) {
  constexpr int W = V::W, NR = 2 * W;
  int64_t s = 0;
  for (; (s + 1) * NR <= n; ++s) {
    V::store(bp + s * ld, V::round_f16(V::load(row + s * NR)));
    V::store(bp + s * ld + W, V::round_f16(V::load(row + s * NR + W)));
  }
  if (s * NR < n) {  // the last strip: the columns past n are 0
    float t[NR] = {};
    std::copy(row + s * NR, row + n, t);
    V::store(bp + s * ld, V::round_f16(V::load(t)));
    V::store(bp + s * ld + W, V::round_f16(V::load(t + W)));
  }
}

/// MR rows x two vectors of accumulators; per id, two loads of B and MR broadcasts of A (one from each
/// row) feed 2 MR FMAs (each accumulator's chain in increasing p).
template <class V, int MR>
void tile(const float* a, int64_t lda, const float* bp, int64_t kc, float* c, int64_t ldc) {
  constexpr int W = V::W;
  typename V::F acc0[MR], acc1[MR];
  const float* ar[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    ar[r] = a + r * lda;
    acc0[r] = V::load(c + r * ldc);
    acc1[r] = V::load(c + r * ldc + W);
  }
  for (int64_t p = 0; p < kc; ++p) {
    const typename V::F b0 = V::load(bp), b1 = V::load(bp + W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const typename V::F x = V::set1(ar[r][p]);
      acc0[r] = V::fmadd(x, b0, acc0[r]);
      acc1[r] = V::fmadd(x, b1, acc1[r]);
    }
    bp += 2 * W;
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    V::store(c + r * ldc, acc0[r]);
    V::store(c + r * ldc + W, acc1[r]);
  }
}

template <class V, int MR>
constexpr PanelGemmKernels kernel_set() {
  return {MR, 2 * V::W, round_f16<V>, pack_b_row<V>, tile<V, MR>};
}

}  // namespace dllm::cpu::simd
