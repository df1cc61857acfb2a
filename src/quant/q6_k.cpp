// Q6_K reference decoder and Q6_K x Q8_K dot product.
// Layout: ggml-common.h block_q6_K; formula: ggml-quants.c dequantize_row_q6_K,
// x = d * scales[j] * (q - 32) for sub-block j (16 values), q = 4 low bits (ql) | 2 high bits (qh).
// Each half of 128 values uses 64 bytes of ql and 32 of qh. Within a half, value r = 32g + l
// (g = 0..3, l = 0..31) takes its low nibble from ql[l + 32 * (g & 1)] (low nibble for g < 2, high
// for g >= 2) and its high 2 bits from bits 2g..2g+1 of qh[l].
#include "quant/quant.h"

namespace dllm::quant {

namespace {

/// The 256 signed 6-bit values (q - 32, in -32..31) of one super-block, in element order.
void unpack_q6_K(const block_q6_K& b, int8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    int8_t* out = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<int8_t>(((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
      out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
      out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

}  // namespace

void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  int8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q6_K(x[i], q);
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK_K / 16; ++j) {
      const float dj = d * static_cast<float>(x[i].scales[j]);  // exact: 11 x 8 bits
      for (int l = 0; l < 16; ++l) y[i * kQK_K + 16 * j + l] = dj * static_cast<float>(q[16 * j + l]);
    }
  }
}

float vec_dot_q6_K_q8_K(const block_q6_K* x, const block_q8_K* y, int64_t n) {
  // Per super-block: d*dy * sum_j scales_j * sum over sub-block j of (q - 32) * a, in int32
  // (|sum| < 2^28), as ggml's ggml_vec_dot_q6_K_q8_K_generic.
  const int64_t nb = n / kQK_K;
  int8_t q[kQK_K];
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q6_K(x[i], q);
    int32_t isum = 0;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) s += static_cast<int32_t>(q[16 * j + l]) * y[i].qs[16 * j + l];
      isum += static_cast<int32_t>(x[i].scales[j]) * s;
    }
    sumf += fp16_to_fp32(x[i].d) * y[i].d * static_cast<float>(isum);
  }
  return sumf;
}

}  // namespace dllm::quant
