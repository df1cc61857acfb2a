// exp in double on 8 AVX-512 lanes, shared by the sampler's AVX-512 files (row_sums_avx512.cpp,
// entropy_bound_avx512.cpp). Include only from files compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

namespace dllm::diffusion {
namespace {

/// exp(x) for x in [-708, 0]: x = k ln2 + r with |r| <= ln2 / 2 (fdlibm's two-part ln 2), e^r by its
/// Taylor series to degree 13 (the next term is below 5e-18 of the result), 2^k from exponent bits.
inline __m512d exp_reduced(__m512d x) {
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(6.93147180369123816490e-01), x);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(1.90821492927058770002e-10), r);
  constexpr double kInvFact[14] = {1.0,
                                   1.0,
                                   1.0 / 2,
                                   1.0 / 6,
                                   1.0 / 24,
                                   1.0 / 120,
                                   1.0 / 720,
                                   1.0 / 5040,
                                   1.0 / 40320,
                                   1.0 / 362880,
                                   1.0 / 3628800,
                                   1.0 / 39916800,
                                   1.0 / 479001600,
                                   1.0 / 6227020800};
  __m512d p = _mm512_set1_pd(kInvFact[13]);
  for (int i = 12; i >= 0; --i) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kInvFact[i]));
  const __m512i e = _mm512_slli_epi64(
      _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k)), _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(p, _mm512_castsi512_pd(e));
}

}  // namespace
}  // namespace dllm::diffusion
