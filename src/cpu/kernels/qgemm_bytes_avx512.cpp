// The AVX-512 VNNI path's Q8_0 / Q5_0 / Q5_K kernels: the ymm VNNI bodies of qgemm_bytes_ymm.h compiled with
// the AVX-512 flags (-mavx512f/bw/vl/dq/vnni), their vpdpbusd / vpdpwssd EVEX-encoded on ymm. Not
// zmm kernels: these matrices are the attention projections of mixture-of-experts files, a small
// share of a step, and this way the code that runs here is the code the emulated-VNNI tests run
// (qgemm_vnniemu_avx2.cpp) on machines without VNNI.
#include "cpu/kernels/qgemm_bytes_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q8_0_avx512(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniEvex>(a);
}
void gemm_q5_0_avx512(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniEvex, Q50Block>(a);
}
void gemm_q5_K_avx512(const GemmArgs& a) {
  gemm_q5_K_ymm<YmmVnniEvex>(a);
}

}  // namespace dllm::cpu::qgemm
