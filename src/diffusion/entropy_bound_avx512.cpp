// The entropy-bound row's two transcendental passes on AVX-512 (entropy_bound_simd.h; compiled with
// the AVX-512 flags, called only where the CPU has them).
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once these inline (a known false positive); nothing here is.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "diffusion/entropy_bound_simd.h"
#include "diffusion/exp_avx512.h"

namespace dllm::diffusion {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Lanes i < n of a tail of fewer than 16.
inline __mmask16 tail16(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// exp(x) for x <= 0: exp_reduced (exp_avx512.h) of max(x, -708) (below, e^x rounds to 0 in float as
// e^-708 does); NaN stays NaN.
inline __m512d exp_pd(__m512d x) {
  const __mmask8 nan = _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_pd(exp_reduced(_mm512_max_pd(x, _mm512_set1_pd(-708.0))), nan, x);
}

// log(x) for x > 0 in double: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) /
// (m + 1), |s| <= 0.1716, by its series to s^23 (the next term is below 1e-18 of the result); e ln 2 in
// two parts. x <= 0 and NaN give NaN (neither reaches a sum: the callers skip p = 0 and NaN).
inline __m512d log_pd(__m512d x) {
  __m512d m = _mm512_getmant_pd(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
  __m512d e = _mm512_getexp_pd(x);
  const __mmask8 big = _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.4142135623730951), _CMP_GT_OQ);
  m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
  e = _mm512_mask_add_pd(e, big, e, _mm512_set1_pd(1.0));
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d s = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
  const __m512d s2 = _mm512_mul_pd(s, s);
  __m512d q = _mm512_set1_pd(1.0 / 23);
  for (int j = 21; j >= 1; j -= 2) q = _mm512_fmadd_pd(q, s2, _mm512_set1_pd(1.0 / j));
  const __m512d log_m = _mm512_mul_pd(_mm512_add_pd(s, s), q);
  const __m512d r = _mm512_fmadd_pd(e, _mm512_set1_pd(6.93147180369123816490e-01),
                                    _mm512_fmadd_pd(e, _mm512_set1_pd(1.90821492927058770002e-10), log_m));
  const __mmask8 special = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_NGT_UQ);  // <= 0 or NaN
  return _mm512_mask_mov_pd(r, special, _mm512_set1_pd(__builtin_nan("")));
}

// f of each of x's 16 lanes, computed in double and rounded once to float.
template <class F>
inline __m512 in_double(__m512 x, F f) {
  const __m512d lo = f(_mm512_cvtps_pd(_mm512_castps512_ps256(x)));
  const __m512d hi = f(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvt_roundpd_ps(lo, kRound)),
                            _mm512_cvt_roundpd_ps(hi, kRound), 1);
}

}  // namespace

void eb_exp_avx512(const float* row, int64_t n, float temp_inv, float m, float* e) {
  const __m512 t = _mm512_set1_ps(temp_inv), vm = _mm512_set1_ps(m);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail16(n - i);
    // row * temp_inv - m as two f32 roundings (the _round forms are never fused into an FMA).
    const __m512 x =
        _mm512_sub_round_ps(_mm512_mul_round_ps(_mm512_maskz_loadu_ps(k, row + i), t, kRound), vm, kRound);
    _mm512_mask_storeu_ps(e + i, k, in_double(x, exp_pd));
  }
}

void eb_plogp_avx512(const float* e, int64_t n, float Z, float* p, float* t) {
  const __m512 z = _mm512_set1_ps(Z);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail16(n - i);
    const __m512 pv = _mm512_div_round_ps(_mm512_maskz_loadu_ps(k, e + i), z, kRound);
    const __m512 l = in_double(pv, log_pd);
    _mm512_mask_storeu_ps(p + i, k, pv);
    _mm512_mask_storeu_ps(t + i, k, _mm512_mul_round_ps(pv, l, kRound));
  }
}

}  // namespace dllm::diffusion
