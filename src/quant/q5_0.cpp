// Q5_0 reference decoder and its exact conversion to Q8_0 blocks.
// Layout: ggml-common.h block_q5_0 (f16 d, 32 high bits qh, 16 bytes of nibbles qs); x = d * (q - 16),
// as ggml's dequantize_row_q5_0 (ggml-quants.c).
#include <cstring>

#include "quant/quant.h"

namespace dllm::quant {

namespace {

/// The 32 values q - 16 of one block, in order.
void q5_0_values(const block_q5_0& b, int8_t* q) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, sizeof(qh));
  for (int j = 0; j < kQK8_0 / 2; ++j) {
    const int lo = (b.qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
    const int hi = (b.qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
    q[j] = static_cast<int8_t>(lo - 16);
    q[j + kQK8_0 / 2] = static_cast<int8_t>(hi - 16);
  }
}

}  // namespace

void dequantize_row_q5_0(const block_q5_0* x, float* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  int8_t q[kQK8_0];
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    q5_0_values(x[i], q);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = d * static_cast<float>(q[j]);
  }
}

void q5_0_to_q8_0(const block_q5_0* x, block_q8_0* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    y[i].d = x[i].d;
    q5_0_values(x[i], y[i].qs);
  }
}

}  // namespace dllm::quant
