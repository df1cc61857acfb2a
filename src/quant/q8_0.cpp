// Q8_0 reference decoder, the Q8_0 activation quantizer and the Q8_0 x Q8_0 dot product.
// Layout: ggml-common.h block_q8_0 (f16 d, 32 x int8 qs); x = d * qs[i].
#include <cmath>

#include "quant/quant.h"

namespace dllm::quant {

void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = d * static_cast<float>(x[i].qs[j]);
  }
}

void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n) {
  // The x86 quantize_row_q8_0 of ggml-cpu (arch/x86/quants.c, its AVX/AVX2 branch, which is what
  // llama.cpp runs on any x86 CPU with AVX): d = amax / 127 and id = 127 / amax, both f32 divisions,
  // then q = round(x * id) with _mm256_round_ps(_MM_ROUND_NEAREST), ties to even. (The portable
  // quantize_row_q8_0_ref instead takes id = 1 / d and rounds half away from zero.)
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    y[i].d = fp32_to_fp16(amax / 127.0f);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < kQK8_0; ++j) {
      // |x * id| <= 127 (1 + 2^-23) rounds to at most 127; the clamp only keeps a NaN input defined.
      const float v = std::nearbyint(x[j] * id);
      y[i].qs[j] = static_cast<int8_t>(std::fmin(std::fmax(v, -127.0f), 127.0f));
    }
  }
}

float vec_dot_q8_0_q8_0(const block_q8_0* x, const block_q8_0* y, int64_t n) {
  // Per block: the int32 sum of 32 products (|sum| <= 32 * 128 * 128 = 2^19), times the product of
  // the two f16 scales in f32, as ggml's ggml_vec_dot_q8_0_q8_0_generic.
  const int64_t nb = n / kQK8_0;
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sumi = 0;
    for (int j = 0; j < kQK8_0; ++j) sumi += static_cast<int32_t>(x[i].qs[j]) * y[i].qs[j];
    sumf += static_cast<float>(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
  }
  return sumf;
}

}  // namespace dllm::quant
