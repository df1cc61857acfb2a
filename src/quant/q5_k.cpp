// Q5_K reference decoder. Layout: ggml-common.h block_q5_K; formula: ggml-quants.c
// dequantize_row_q5_K. As Q4_K (same scales, same nibble order in qs) plus a fifth bit per value:
// value l (0..31) of sub-block j (0..7) has its bit 4 in bit j of qh[l].
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
      uint8_t sc0, m0, sc1, m1;
      detail::get_scale_min_k4(2 * c, x[i].scales, &sc0, &m0);
      detail::get_scale_min_k4(2 * c + 1, x[i].scales, &sc1, &m1);
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

}  // namespace dllm::quant
