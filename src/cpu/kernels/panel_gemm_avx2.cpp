// The panel GEMM kernels on 8 f32 lanes (ymm; compiled with -mavx2 -mfma -mf16c), used by the AVX2 and
// AVX-VNNI paths: 6 x 16 tiles, 12 accumulators of the 16 ymm registers. Bodies in panel_gemm_simd.h.
#include "cpu/kernels/lanes_ymm.h"
#include "cpu/kernels/panel_gemm_simd.h"

namespace dllm::cpu::simd {

const PanelGemmKernels& panel_gemm_kernels_avx2() {
  static constexpr PanelGemmKernels kKernels = kernel_set<Ymm, 6>();
  return kKernels;
}

}  // namespace dllm::cpu::simd
