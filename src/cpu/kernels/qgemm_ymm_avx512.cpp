// The AVX-512 VNNI path's Q6_K kernel over the compact Q6KBlock layout (6.625 bits/weight): the ymm
// VNNI body of qgemm_ymm.h compiled with the AVX-512 flags, vpdpbusd / vpdpwssd EVEX-encoded on ymm.
// Used for expert matrices that a step reads for a row or two (WeightLayout::kCompact, cpu/matmul.h):
// there the bytes read decide the time, and Q6KBlock is 3/4 of the Q6K8Block bytes the zmm kernel
// reads. It is the code the AVX-VNNI path and the emulated-VNNI tests run (the same template).
#include "cpu/kernels/qgemm_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q6_K_avx512ymm(const GemmArgs& a) {
  gemm_q6_K_ymm<YmmVnniEvex>(a);
}

}  // namespace dllm::cpu::qgemm
