// Tests only: the ymm VNNI kernels of every layout (cpu/kernels/qgemm_ymm.h for Q4_K / Q6_K,
// kernels/qgemm_bytes_ymm.h for Q8_0 / Q5_0 / Q5_K) with vpdpbusd / vpdpwssd replaced by exact AVX2
// sequences (kernels/ymm_dot.h YmmVnniEmu). Compiled with the AVX2 flags, so the logic of the
// AVX-VNNI kernels, and of the AVX-512 path's Q5_K kernel (the same body), runs in the tests
// of any AVX2 machine. make_matrix_vnni_emulated (cpu/matmul.h) builds matrices over these.
#include "cpu/kernels/qgemm_bytes_ymm.h"
#include "cpu/kernels/qgemm_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q4_K_vnniemu(const GemmArgs& a) {
  gemm_q4_K_ymm<YmmVnniEmu>(a);
}
void gemm_q6_K_vnniemu(const GemmArgs& a) {
  gemm_q6_K_ymm<YmmVnniEmu>(a);
}
void gemm_q8_0_vnniemu(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniEmu>(a);
}
void gemm_q5_0_vnniemu(const GemmArgs& a) {
  gemm_q8_0_ymm<YmmVnniEmu, Q50Block>(a);
}
void gemm_q5_K_vnniemu(const GemmArgs& a) {
  gemm_q5_K_ymm<YmmVnniEmu>(a);
}

}  // namespace dllm::cpu::qgemm
