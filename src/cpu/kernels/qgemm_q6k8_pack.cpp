// Repacking of GGUF Q6_K blocks into the byte layout of Q6K8Block (cpu/kernels/qgemm.h), used by the AVX-512
// path, and the unsigned activation bytes its kernel reads. The 6-bit values are decoded from ggml's
// block_q6_K layout (ggml-common.h; the same reading as quant/q6_k.cpp): in each half of 128 values, value
// 32g + l takes its low nibble from ql[l + 32 (g & 1)] (low nibble for g < 2, high for g >= 2) and its top 2
// bits from bits 2g, 2g+1 of qh[l].
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_pack_walk.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

namespace {

void q6_K_values_u8(const quant::block_q6_K& b, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* out = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      out[l] = uint8_t((ql[l] & 0xF) | ((qh[l] & 3) << 4));
      out[l + 32] = uint8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      out[l + 64] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      out[l + 96] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

void pack_row(const quant::block_q6_K& b, int r, Q6K8Block& o) {
  o.d[r] = quant::fp16_to_fp32(b.d);
  uint8_t q[quant::kQK_K];
  q6_K_values_u8(b, q);
  int32_t corr = 0;
  for (int s = 0; s < 8; ++s) {
    o.scales[s][r][0] = b.scales[2 * s];
    o.scales[s][r][1] = b.scales[2 * s + 1];
    for (int h = 0; h < 2; ++h) {
      int32_t sum = 0;
      for (int p = 0; p < 4; ++p) {
        for (int k = 0; k < 4; ++k) {
          const int v = int(q[32 * s + 16 * h + 4 * p + k]) - 32;
          o.q[s][p][h][r][k] = int8_t(v);
          sum += v;
        }
      }
      corr += 128 * int32_t(b.scales[2 * s + h]) * sum;
    }
  }
  o.corr[r] = corr;
}

}  // namespace

AlignedArray<Q6K8Block> pack_q6_K8(const quant::block_q6_K* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q6K8Block>(src, n_out, n_in, pack_row);
}

void make_u8(const quant::block_q8_K* x, int64_t n_tokens, int64_t n_sb, uint8_t* xu8) {
  for (int64_t i = 0; i < n_tokens * n_sb; ++i) {
    for (int k = 0; k < quant::kQK_K; ++k) xu8[i * quant::kQK_K + k] = uint8_t(x[i].qs[k]) ^ 0x80;
  }
}

}  // namespace dllm::cpu::qgemm
