// The f32 operations on 16 lanes (zmm) that the AVX-512 kernels are written over
// (row_kernels_simd.h, panel_gemm_simd.h). Include only from files compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dllm::cpu::simd {
namespace {

struct Zmm {
  using F = __m512;
  static constexpr int W = 16;
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F abs(F a) { return _mm512_abs_ps(a); }
  /// Lanes where x < lim take a, the others b.
  static F select_lt(F x, float lim, F a, F b) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(lim), _CMP_LT_OQ), b, a);
  }
  /// r, with x's lanes where x is NaN.
  static F keep_nan(F r, F x) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x); }
  /// |mag| with the sign bit of sgn (mag >= 0).
  static F copysign(F mag, F sgn) { return _mm512_or_ps(mag, _mm512_and_ps(sgn, _mm512_set1_ps(-0.0f))); }
  /// The 16 int8 at p as f32 (exact).
  static F from_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static float hmax(F a) { return _mm512_reduce_max_ps(a); }
  /// Rounded to binary16 (ties to even) and back.
  static F round_f16(F a) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  /// table[bits of a rounded to binary16 (ties to even)], gathered.
  static F f16_lookup(F a, const float* table) {
    const __m256i h = _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_i32gather_ps(_mm512_cvtepu16_epi32(h), table, 4);
  }
  static F round_even(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F exp2n(F p, F n) { return _mm512_scalef_ps(p, n); }
  static F keep_ge(F r, F x, float lim) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(lim), _CMP_GE_OQ), r);
  }
  static unsigned eq_mask(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static int16_t quant16(const float* x, F iscale, int8_t* q) {
    F v = round_even(_mm512_mul_ps(_mm512_loadu_ps(x), iscale));
    v = _mm512_min_ps(v, _mm512_set1_ps(127.0f));
    const __m512i i = _mm512_cvtps_epi32(v);  // exact: v is integral
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(i));
    return static_cast<int16_t>(_mm512_reduce_add_epi32(i));
  }
  struct DAcc {
    __m512d lo, hi;
  };
  static DAcc dzero() { return {_mm512_setzero_pd(), _mm512_setzero_pd()}; }
  static void dadd(DAcc& s, F v) {
    s.lo = _mm512_add_pd(s.lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    s.hi = _mm512_add_pd(s.hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
  }
  static void dsq(DAcc& s, F v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    s.lo = _mm512_fmadd_pd(lo, lo, s.lo);
    s.hi = _mm512_fmadd_pd(hi, hi, s.hi);
  }
  static double dsum(const DAcc& s) { return _mm512_reduce_add_pd(_mm512_add_pd(s.lo, s.hi)); }
};

}  // namespace
}  // namespace dllm::cpu::simd
