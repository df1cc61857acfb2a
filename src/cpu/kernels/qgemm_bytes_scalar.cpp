// The portable Q8_0 / Q5_K GEMM over the byte layouts: the same integer sums, in the same grouping, as
// the SIMD kernels, one row and one token at a time. The path for CPUs without AVX2 and a second
// reading of the layouts for the tests; not meant to be fast.
#include "cpu/kernels/qgemm_bytes.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

void gemm_q8_0_scalar(const GemmArgs& a) {
  const auto* w = static_cast<const Q80Block*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      float acc[kRows] = {};
      for (int64_t b = 0; b < a.n_sb; ++b) {
        const Q80Block& blk = w[g * a.n_sb + b];
        const quant::block_q8_0& xb = a.x80[t * a.n_sb + b];
        const float dx = quant::fp16_to_fp32(xb.d);
        for (int r = 0; r < kRows; ++r) {
          int32_t s = 0;
          for (int p = 0; p < 8; ++p) {
            for (int k = 0; k < 4; ++k) s += int32_t(blk.qs[p][r][k]) * xb.qs[4 * p + k];
          }
          acc[r] += (quant::fp16_to_fp32(blk.d[r]) * dx) * float(s);
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const int64_t o = g * kRows + r;
        if (o >= a.o_begin && o < a.o_end) a.y[t * a.ldy + o] = acc[r];
      }
    }
  }
}

void gemm_q5_K_scalar(const GemmArgs& a) {
  const auto* w = static_cast<const Q5KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      float acc[kRows] = {};
      for (int64_t sb = 0; sb < a.n_sb; ++sb) {
        const Q5KBlock& blk = w[g * a.n_sb + sb];
        const quant::block_q8_K& xb = a.x[t * a.n_sb + sb];
        const int16_t* bs = a.bs32 + (t * a.n_sb + sb) * 8;
        for (int r = 0; r < kRows; ++r) {
          int32_t s = 0;  // sum_j sc[j] * sum_i q_i x_i
          for (int j = 0; j < 8; ++j) {
            int32_t isum = 0;
            for (int p = 0; p < 8; ++p) {
              for (int k = 0; k < 4; ++k) isum += int32_t(blk.q[j][p][r][k]) * xb.qs[32 * j + 4 * p + k];
            }
            s += int32_t(blk.scales[j][r]) * isum;
          }
          int32_t m = 0;  // sum_j m[j] * (sum of the 32 activations of sub-block j)
          for (int p = 0; p < 4; ++p) m += blk.mins[p][r][0] * bs[2 * p] + blk.mins[p][r][1] * bs[2 * p + 1];
          const float d = quant::fp16_to_fp32(blk.d[r]);
          const float dmin = quant::fp16_to_fp32(blk.dmin[r]);
          acc[r] += xb.d * (d * float(s) - dmin * float(m));
        }
      }
      for (int r = 0; r < kRows; ++r) {
        const int64_t o = g * kRows + r;
        if (o >= a.o_begin && o < a.o_end) a.y[t * a.ldy + o] = acc[r];
      }
    }
  }
}

}  // namespace dllm::cpu::qgemm
