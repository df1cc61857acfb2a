// AVX-VNNI kernels (compiled with -mavx2 -mfma -mf16c -mavxvnni): VEX-encoded ymm vpdpbusd / vpdpwssd
// over the packed groups. The kernel bodies are in qgemm_ymm.h, shared with the AVX2 path.
#include "cpu/kernels/qgemm_ymm.h"

namespace dllm::cpu::qgemm {

void gemm_q4_K_avxvnni(const GemmArgs& a) {
  gemm_q4_K_ymm<YmmVnniVex>(a);
}
void gemm_q6_K_avxvnni(const GemmArgs& a) {
  gemm_q6_K_ymm<YmmVnniVex>(a);
}

}  // namespace dllm::cpu::qgemm
