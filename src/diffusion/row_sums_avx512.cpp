// row_sums.h on AVX-512F (compiled with the AVX-512 flags; called only where the CPU has them).
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once these inline (a known false positive); nothing here is.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <limits>

#include "diffusion/exp_avx512.h"
#include "diffusion/row_sums.h"

namespace dllm::diffusion {

namespace {

// Lanes i < n of a tail of fewer than 16.
inline __mmask16 tail16(size_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// allowed[0..k) != 0 as a mask, k <= 16 (bytes past k are not read).
inline __mmask16 allowed_mask(const uint8_t* allowed, __mmask16 k) {
  const __m128i a = _mm_maskz_loadu_epi8(k, allowed);
  return _mm_test_epi8_mask(a, a) & k;
}

}  // namespace

float max_allowed_avx512(const float* logits, const uint8_t* allowed, size_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail16(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(k, logits + i);
    const __mmask16 use = allowed_mask(allowed + i, k) & _mm512_cmp_ps_mask(x, x, _CMP_ORD_Q);
    m = _mm512_mask_max_ps(m, use, m, x);
  }
  return _mm512_reduce_max_ps(m);
}

double sum_exp_shifted_avx512(const float* logits, const uint8_t* allowed, size_t n, double m) {
  const __m512d vm = _mm512_set1_pd(m), lo = _mm512_set1_pd(-708.0), zero = _mm512_setzero_pd();
  __m512d z0 = zero, z1 = zero;
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 k = tail16(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(k, logits + i);
    const __mmask16 a = allowed_mask(allowed + i, k);
    const __m512d x0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(x)), vm);
    const __m512d x1 =
        _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))), vm);
    // Lanes that count: allowed and x >= -708 (an ordered compare, so NaN does not count).
    const __mmask8 u0 = _mm512_cmp_pd_mask(x0, lo, _CMP_GE_OQ) & __mmask8(a);
    const __mmask8 u1 = _mm512_cmp_pd_mask(x1, lo, _CMP_GE_OQ) & __mmask8(a >> 8);
    z0 = _mm512_mask_add_pd(z0, u0, z0, exp_reduced(_mm512_min_pd(_mm512_max_pd(x0, lo), zero)));
    z1 = _mm512_mask_add_pd(z1, u1, z1, exp_reduced(_mm512_min_pd(_mm512_max_pd(x1, lo), zero)));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(z0, z1));
}

}  // namespace dllm::diffusion
