// The portable Q8_0 / Q5_0 / Q5_K GEMM over the layouts of qgemm_bytes.h: the same integer sums, in the same
// grouping, as the SIMD kernels, one row and one token at a time. The path for CPUs without AVX2 and a second
// reading of the layouts for the tests; not meant to be fast.
#include "cpu/kernels/qgemm_bytes.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

namespace {

// Value 4p + k of row r: q of a Q8_0 block, q - 16 of a Q5_0 block (its nibble and inverted bit 4).
int value(const Q80Block& b, int r, int p, int k) {
  return b.qs[p][r][k];
}
int value(const Q50Block& b, int r, int p, int k) {
  const int lo = (b.ql[p % 4][r][k] >> (4 * (p / 4))) & 0xF;
  return lo - 16 * ((b.nh[r][k] >> p) & 1);
}

// Q8_0 and Q5_0 (Block = Q80Block or Q50Block): per row, token and block of 32 the int32 sum of the
// products, then y += (d_w * d_x) * sum.
template <class Block>
void gemm_b32_scalar(const GemmArgs& a) {
  const auto* w = static_cast<const Block*>(a.w);
  for (int64_t g = a.g_begin; g < a.g_end; ++g) {
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      float acc[kRows] = {};
      for (int64_t b = 0; b < a.n_sb; ++b) {
        const Block& blk = w[g * a.n_sb + b];
        const quant::block_q8_0& xb = a.x80[t * a.n_sb + b];
        const float dx = quant::fp16_to_fp32(xb.d);
        for (int r = 0; r < kRows; ++r) {
          int32_t s = 0;
          for (int p = 0; p < 8; ++p) {
            for (int k = 0; k < 4; ++k) s += value(blk, r, p, k) * xb.qs[4 * p + k];
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

}  // namespace

void gemm_q8_0_scalar(const GemmArgs& a) {
  gemm_b32_scalar<Q80Block>(a);
}

void gemm_q5_0_scalar(const GemmArgs& a) {
  gemm_b32_scalar<Q50Block>(a);
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
