// exp in double on 8 AVX-512 lanes, shared by the sampler's AVX-512 files (row_sums_avx512.cpp,
// entropy_bound_avx512.cpp). Include only from files compiled with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include "diffusion/exp_reduction.h"

namespace dllm::diffusion {
namespace {

/// exp(x) for x in [-708, 0], as exp_reduction.h describes.
inline __m512d exp_reduced(__m512d x) {
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(kLog2e)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Hi), x);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Lo), r);
  __m512d p = _mm512_set1_pd(kExpInvFact[13]);
  for (int i = 12; i >= 0; --i) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kExpInvFact[i]));
  const __m512i e = _mm512_slli_epi64(
      _mm512_add_epi64(_mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k)), _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(p, _mm512_castsi512_pd(e));
}

}  // namespace
}  // namespace dllm::diffusion
