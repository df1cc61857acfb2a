// Q4_K reference decoder and Q4_K x Q8_K dot product.
// Layout: ggml-common.h block_q4_K; formula: ggml-quants.c dequantize_row_q4_K,
// x = d * sc[j] * q - dmin * m[j] for sub-block j (32 values) with 6-bit sc/m (get_scale_min_k4).
// The 128 bytes of qs are 4 chunks of 32 bytes; chunk c holds sub-block 2c in the low nibbles and
// sub-block 2c+1 in the high nibbles, value l of each sub-block in byte l of the chunk.
#include "quant/k_scales.h"
#include "quant/quant.h"

namespace dllm::quant {

void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* q = x[i].qs;
    float* out = y + i * kQK_K;
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      q4k_scale_min(2 * c, x[i].scales, sc0, m0);
      q4k_scale_min(2 * c + 1, x[i].scales, sc1, m1);
      // (d * sc) and (dmin * m) are exact in f32 (11 x 6 bits); d1 * q is exact too, so the only
      // rounding is the final subtraction, as in ggml.
      const float d0 = d * sc0, mm0 = dmin * m0;
      const float d1 = d * sc1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) out[64 * c + l] = d0 * static_cast<float>(q[l] & 0xf) - mm0;
      for (int l = 0; l < 32; ++l) out[64 * c + 32 + l] = d1 * static_cast<float>(q[l] >> 4) - mm1;
      q += 32;
    }
  }
}

float vec_dot_q4_K_q8_K(const block_q4_K* x, const block_q8_K* y, int64_t n) {
  // Per super-block: sum_j (d*sc_j*q - dmin*m_j) * (dy*a) over values =
  //   d*dy * sum_j sc_j * sum(q*a)  -  dmin*dy * sum_j m_j * sum(a),
  // the integer sums exact in int32 (|sum| < 2^26); sum(a) over a sub-block of 32 comes from the
  // two bsums of 16 (ggml's ggml_vec_dot_q4_K_q8_K_generic does the same).
  const int64_t nb = n / kQK_K;
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* q = x[i].qs;
    const int8_t* a = y[i].qs;
    int32_t isum = 0;
    int32_t msum = 0;
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      q4k_scale_min(2 * c, x[i].scales, sc0, m0);
      q4k_scale_min(2 * c + 1, x[i].scales, sc1, m1);
      int32_t s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += static_cast<int32_t>(q[l] & 0xf) * a[64 * c + l];
        s1 += static_cast<int32_t>(q[l] >> 4) * a[64 * c + 32 + l];
      }
      isum += sc0 * s0 + sc1 * s1;
      msum += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
              m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
      q += 32;
    }
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
    sumf += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sumf;
}

}  // namespace dllm::quant
