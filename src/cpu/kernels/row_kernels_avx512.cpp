// The row kernels on 16 f32 lanes (zmm; compiled with the AVX-512 flags). Algorithms in
// row_kernels_simd.h.
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" (or "is used uninitialized", in the gather) once the reductions and gathers inline (a
// known false positive, as in qgemm_avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "cpu/kernels/dot4_ymm.h"
#include "cpu/kernels/dot4_zmm.h"
#include "cpu/kernels/lanes_zmm.h"
#include "cpu/kernels/row_kernels_simd.h"

namespace dllm::cpu::simd {
namespace {

const RowKernels kKernels = {quantize_q8_K<Zmm>, silu_mul<Zmm>,        attention_head<Zmm, 4>,
                             rmsnorm<Zmm>,       dot_f32_x4_ymm,       dot_f32_x4x2_zmm,
                             softmax_f16<Zmm>,   dequantize_q6_K<Zmm>, softcap<Zmm>,
                             gelu_mul<Zmm>,      dot_f32_x4x4_zmm};

}  // namespace

const RowKernels& row_kernels_avx512() {
  return kKernels;
}

}  // namespace dllm::cpu::simd
