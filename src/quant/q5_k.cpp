// Q5_K reference decoder and Q5_K x Q8_K dot product. Layout: ggml-common.h block_q5_K; formula:
// ggml-quants.c dequantize_row_q5_K. As Q4_K (same scales, same nibble order in qs) plus a fifth bit per
// value: value l (0..31) of sub-block j (0..7) has its bit 4 in bit j of qh[l].
#include "quant/k_scales.h"
#include "quant/quant.h"

namespace dllm::quant {

void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    float* out = y + i * kQK_K;
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      q4k_scale_min(2 * c, x[i].scales, sc0, m0);
      q4k_scale_min(2 * c + 1, x[i].scales, sc1, m1);
      const float d0 = d * sc0, mm0 = dmin * m0;
      const float d1 = d * sc1, mm1 = dmin * m1;
      const uint8_t bit0 = static_cast<uint8_t>(1u << (2 * c));
      const uint8_t bit1 = static_cast<uint8_t>(2u << (2 * c));
      for (int l = 0; l < 32; ++l) {
        const int q = (ql[l] & 0xf) + ((qh[l] & bit0) ? 16 : 0);
        out[64 * c + l] = d0 * static_cast<float>(q) - mm0;
      }
      for (int l = 0; l < 32; ++l) {
        const int q = (ql[l] >> 4) + ((qh[l] & bit1) ? 16 : 0);
        out[64 * c + 32 + l] = d1 * static_cast<float>(q) - mm1;
      }
      ql += 32;
    }
  }
}

float vec_dot_q5_K_q8_K(const block_q5_K* x, const block_q8_K* y, int64_t n) {
  // As vec_dot_q4_K_q8_K with q in 0..31: d*dy * sum_j sc_j * sum(q*a) - dmin*dy * sum_j m_j * sum(a),
  // the integer sums exact in int32 (|sum| <= 8 * 63 * 32 * 31 * 128 < 2^27), the sums of 32
  // activations from two bsums of 16 (ggml's ggml_vec_dot_q5_K_q8_K_generic).
  const int64_t nb = n / kQK_K;
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    const int8_t* a = y[i].qs;
    int32_t isum = 0;
    int32_t msum = 0;
    for (int c = 0; c < 4; ++c) {
      int sc0, m0, sc1, m1;
      q4k_scale_min(2 * c, x[i].scales, sc0, m0);
      q4k_scale_min(2 * c + 1, x[i].scales, sc1, m1);
      const uint8_t bit0 = static_cast<uint8_t>(1u << (2 * c));
      const uint8_t bit1 = static_cast<uint8_t>(2u << (2 * c));
      int32_t s0 = 0, s1 = 0;
      for (int l = 0; l < 32; ++l) {
        s0 += ((ql[l] & 0xf) + ((qh[l] & bit0) ? 16 : 0)) * a[64 * c + l];
        s1 += ((ql[l] >> 4) + ((qh[l] & bit1) ? 16 : 0)) * a[64 * c + 32 + l];
      }
      isum += sc0 * s0 + sc1 * s1;
      msum += m0 * (y[i].bsums[4 * c] + y[i].bsums[4 * c + 1]) +
              m1 * (y[i].bsums[4 * c + 2] + y[i].bsums[4 * c + 3]);
      ql += 32;
    }
    const float d = fp16_to_fp32(x[i].d) * y[i].d;
    const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
    sumf += d * static_cast<float>(isum) - dmin * static_cast<float>(msum);
  }
  return sumf;
}

}  // namespace dllm::quant
