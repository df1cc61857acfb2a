// make_matrix: picks the kernel for a weight type and ISA. The fast packed kernels (issue 3) plug in
// here; until then every ISA uses the portable reference matrices.
#include "cpu/matmul.h"

namespace dllm::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

std::unique_ptr<Matrix> make_matrix(const gguf::TensorInfo& tensor, const uint8_t* data, Isa isa) {
  (void)isa;
  return make_matrix_ref(tensor, data);
}

}  // namespace dllm::cpu
