// The row kernels on 8 f32 lanes (ymm; compiled with -mavx2 -mfma), used by the AVX2 and AVX-VNNI
// paths. Algorithms in row_kernels_simd.h.
#include <immintrin.h>

#include "cpu/kernels/dot4_ymm.h"
#include "cpu/kernels/lanes_ymm.h"
#include "cpu/kernels/row_kernels_simd.h"

namespace dllm::cpu::simd {
namespace {

const RowKernels kKernels = {quantize_q8_K<Ymm>,
                             silu_mul<Ymm>,
                             attention_head<Ymm, 2>,
                             rmsnorm<Ymm>,
                             dot_f32_x4_ymm,
                             dot_f32_x4x2_ymm,
                             softmax_f16<Ymm>,
                             dequantize_q6_K<Ymm>,
                             softcap<Ymm>,
                             gelu_mul<Ymm>,
                             dot_f32_x4x4_by_pairs<dot_f32_x4x2_ymm>};

}  // namespace

const RowKernels& row_kernels_avx2() {
  return kKernels;
}

}  // namespace dllm::cpu::simd
