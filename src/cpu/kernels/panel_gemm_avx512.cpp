// The panel GEMM kernels on 16 f32 lanes (zmm; compiled with the AVX-512 flags): 8 x 32 tiles, 16
// accumulators of the 32 zmm registers. Bodies in panel_gemm_simd.h.
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once the conversions inline (a known false positive, as in qgemm_avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "cpu/kernels/lanes_zmm.h"
#include "cpu/kernels/panel_gemm_simd.h"

namespace dllm::cpu::simd {

const PanelGemmKernels& panel_gemm_kernels_avx512() {
  static constexpr PanelGemmKernels kKernels = kernel_set<Zmm, 8>();
  return kKernels;
}

}  // namespace dllm::cpu::simd
