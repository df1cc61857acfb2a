// The ymm VNNI Q6_K kernel over the compact Q6KBlock layout (qgemm_ymm.h, the AVX-VNNI path's) compiled
// with the AVX-512 flags, vpdpbusd / vpdpwssd EVEX-encoded on ymm, so it runs on AVX-512 CPUs without
// AVX-VNNI too. No path runs it: the AVX-512 and AMX paths read compact expert matrices with the zmm
// kernel gemm_q6_K_avx512 (qgemm_avx512.cpp), and the tests hold that kernel to this one's bits
// (QGemmKernels.CompactQ6KZmmGivesTheYmmKernelsBits).
#include "cpu/kernels/qgemm_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q6_K_avx512ymm(const GemmArgs& a) {
  gemm_q6_K_ymm<YmmVnniEvex>(a);
}

}  // namespace dllm::cpu::qgemm
