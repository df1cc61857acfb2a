// Q8_0 reference decoder. Layout: ggml-common.h block_q8_0 (f16 d, 32 x int8 qs); x = d * qs[i].
#include "quant/quant.h"

namespace dllm::quant {

void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = d * static_cast<float>(x[i].qs[j]);
  }
}

}  // namespace dllm::quant
