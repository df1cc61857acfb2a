// The portable GEMM over the packed layout: the same integer sums, in the same grouping, as the SIMD
// kernels, one row and one token at a time. It is the path for CPUs without AVX2 and the one the tests
// check the layout with; it is not meant to be fast.
#include <cstring>

#include "cpu/kernels/qgemm.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

void gemm_q4_K_scalar(const GemmArgs& a) {
  const auto* w = static_cast<const Q4KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      float acc[kRows] = {};
      for (int64_t sb = 0; sb < a.n_sb; ++sb) {
        const Q4KBlock& blk = w[g * a.n_sb + sb];
        const quant::block_q8_K& xb = a.x[t * a.n_sb + sb];
        const int16_t* bs = a.bs32 + (t * a.n_sb + sb) * 8;
        for (int r = 0; r < kRows; ++r) {
          int32_t s = 0;  // sum_j sc[j] * sum_i q_i x_i
          for (int j = 0; j < 8; ++j) {
            int32_t isum = 0;
            for (int p = 0; p < 4; ++p) {
              for (int k = 0; k < 4; ++k) {
                const uint8_t byte = blk.qs[j][p][r][k];
                isum +=
                    (byte & 0xF) * xb.qs[32 * j + 4 * p + k] + (byte >> 4) * xb.qs[32 * j + 16 + 4 * p + k];
              }
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

void gemm_q6_K_scalar(const GemmArgs& a) {
  const auto* w = static_cast<const Q6KBlock*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      float acc[kRows] = {};
      for (int64_t sb = 0; sb < a.n_sb; ++sb) {
        const Q6KBlock& blk = w[g * a.n_sb + sb];
        const quant::block_q8_K& xb = a.x[t * a.n_sb + sb];
        for (int r = 0; r < kRows; ++r) {
          int32_t s = 0;
          for (int sp = 0; sp < 8; ++sp) {
            int32_t isum_lo = 0, isum_hi = 0;  // sub-blocks 2 sp and 2 sp + 1
            for (int p = 0; p < 4; ++p) {
              const int h = p / 2, shift = 4 * (p & 1);
              for (int k = 0; k < 4; ++k) {
                const uint8_t ql = blk.ql[sp][p][r][k];
                const uint8_t qh = uint8_t(blk.qh[sp][h][r][k] >> shift);
                const int q_lo = (ql & 0xF) | ((qh & 3) << 4);
                const int q_hi = (ql >> 4) | (((qh >> 2) & 3) << 4);
                isum_lo += q_lo * xb.qs[32 * sp + 4 * p + k];
                isum_hi += q_hi * xb.qs[32 * sp + 16 + 4 * p + k];
              }
            }
            s += blk.scales[sp][r][0] * isum_lo + blk.scales[sp][r][1] * isum_hi;
          }
          // The stored q is the weight + 32: subtract 32 * sum_j sc[j] * (sum of sub-block j's activations).
          int32_t off = 0;
          for (int sp = 0; sp < 8; ++sp) {
            off += blk.scales[sp][r][0] * xb.bsums[2 * sp] + blk.scales[sp][r][1] * xb.bsums[2 * sp + 1];
          }
          s -= 32 * off;
          acc[r] += xb.d * (blk.d[r] * float(s));
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
