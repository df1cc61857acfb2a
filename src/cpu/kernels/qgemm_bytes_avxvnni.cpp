// AVX-VNNI Q8_0 / Q5_0 / Q5_K kernels (compiled with -mavx2 -mfma -mf16c -mavxvnni: VEX vpdpbusd / vpdpwssd);
// bodies in qgemm_bytes_ymm.h, the same code qgemm_vnniemu_avx2.cpp runs with emulated instructions.
#include "cpu/kernels/qgemm_bytes_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q8_0_avxvnni(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniVex>(a);
}
void gemm_q5_0_avxvnni(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniVex, Q50Block>(a);
}
void gemm_q5_K_avxvnni(const GemmArgs& a) {
  gemm_q5_K_ymm<YmmVnniVex>(a);
}

}  // namespace dllm::cpu::qgemm
