// AVX2 kernels (compiled with -mavx2 -mfma -mf16c): vpmaddubsw + vpmaddwd over the packed groups
// (Q4KBlock, and Q6K8Block for Q6_K).
// The kernel bodies are in qgemm_ymm.h, shared with the AVX-VNNI path.
#include "cpu/kernels/qgemm_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q4_K_avx2(const GemmArgs& a) {
  gemm_q4_K_ymm<YmmAvx2>(a);
}
void gemm_q6_K8_avx2(const GemmArgs& a) {
  gemm_q6_K8_ymm_avx2(a);
}

}  // namespace dllm::cpu::qgemm
