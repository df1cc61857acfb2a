// The f32 operations on 8 lanes (ymm) that the AVX2 kernels are written over (row_kernels_simd.h,
// panel_gemm_simd.h). Include only from files compiled with -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace dllm::cpu::simd {
namespace {

struct Ymm {
  using F = __m256;
  static constexpr int W = 8;
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  /// Lanes where x < lim take a, the others b.
  static F select_lt(F x, float lim, F a, F b) {
    return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_set1_ps(lim), _CMP_LT_OQ));
  }
  /// r, with x's lanes where x is NaN.
  static F keep_nan(F r, F x) { return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  /// |mag| with the sign bit of sgn (mag >= 0).
  static F copysign(F mag, F sgn) { return _mm256_or_ps(mag, _mm256_and_ps(sgn, _mm256_set1_ps(-0.0f))); }
  /// The 8 int8 at p as f32 (exact).
  static F from_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static float hmax(F a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  /// Rounded to binary16 (ties to even) and back: F16C.
  static F round_f16(F a) { return _mm256_cvtph_ps(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)); }
  /// table[bits of a rounded to binary16 (ties to even)], gathered.
  static F f16_lookup(F a, const float* table) {
    return _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(_mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT)),
                               4);
  }
  static F round_even(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F exp2n(F p, F n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
  static F keep_ge(F r, F x, float lim) {
    return _mm256_and_ps(r, _mm256_cmp_ps(x, _mm256_set1_ps(lim), _CMP_GE_OQ));
  }
  static unsigned eq_mask(F a, F b) {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)));
  }
  static int16_t quant16(const float* x, F iscale, int8_t* q) {
    const F c = _mm256_set1_ps(127.0f);
    const __m256i a =
        _mm256_cvtps_epi32(_mm256_min_ps(round_even(_mm256_mul_ps(_mm256_loadu_ps(x), iscale)), c));
    const __m256i b =
        _mm256_cvtps_epi32(_mm256_min_ps(round_even(_mm256_mul_ps(_mm256_loadu_ps(x + 8), iscale)), c));
    // packs works within 128-bit lanes: [a0-3 b0-3 | a4-7 b4-7] -> 64-bit order 0 2 1 3 -> a0-7 b0-7.
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
    const __m128i bytes = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), bytes);
    __m256i s = _mm256_add_epi32(a, b);
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    return static_cast<int16_t>(_mm_cvtsi128_si32(s4));
  }
  struct DAcc {
    __m256d lo, hi;
  };
  static DAcc dzero() { return {_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static void dadd(DAcc& s, F v) {
    s.lo = _mm256_add_pd(s.lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    s.hi = _mm256_add_pd(s.hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  static void dsq(DAcc& s, F v) {
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    s.lo = _mm256_fmadd_pd(lo, lo, s.lo);
    s.hi = _mm256_fmadd_pd(hi, hi, s.hi);
  }
  static double dsum(const DAcc& s) {
    const __m256d t = _mm256_add_pd(s.lo, s.hi);
    __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    u = _mm_add_sd(u, _mm_unpackhi_pd(u, u));
    return _mm_cvtsd_f64(u);
  }
};

}  // namespace
}  // namespace dllm::cpu::simd
