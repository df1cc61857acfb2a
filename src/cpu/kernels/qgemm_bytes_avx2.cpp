// AVX2 Q8_0 / Q5_0 / Q5_K kernels (compiled with -mavx2 -mfma -mf16c); bodies in qgemm_bytes_ymm.h.
#include "cpu/kernels/qgemm_bytes_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q8_0_avx2(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmAvx2>(a);
}
void gemm_q5_0_avx2(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmAvx2, Q50Block>(a);
}
void gemm_q5_K_avx2(const GemmArgs& a) {
  gemm_q5_K_ymm<YmmAvx2>(a);
}

}  // namespace dllm::cpu::qgemm
