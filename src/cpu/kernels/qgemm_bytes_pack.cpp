// Load-time repacking of GGUF Q8_0 / Q5_K / Q5_0 rows into the layouts of cpu/kernels/qgemm_bytes.h,
// and the unsigned Q8_0 activation bytes the VNNI kernels read. Portable C++; runs once per matrix.
// The GGUF layouts are read as ggml-common.h describes them (quant/blocks.h; the same reading as
// quant/q8_0.cpp, quant/q5_k.cpp and quant/q5_0.cpp).
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/qgemm_pack_walk.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

namespace {

void pack_q8_0_row(const quant::block_q8_0& b, int r, Q80Block& o) {
  o.d[r] = b.d;
  int sum = 0;
  for (int p = 0; p < 8; ++p) {
    for (int k = 0; k < 4; ++k) {
      o.qs[p][r][k] = b.qs[4 * p + k];
      sum += b.qs[4 * p + k];
    }
  }
  o.sum[r] = int16_t(sum);
}

// The 256 five-bit values of a block_q5_K, in order: value l (0..31) of sub-block j takes its low 4
// bits from byte 32 (j / 2) + l of qs (low nibble for even j, high for odd j) and bit 4 from bit j of
// qh[l].
void q5_K_values(const quant::block_q5_K& b, uint8_t* q) {
  for (int j = 0; j < 8; ++j) {
    const uint8_t* s = b.qs + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = uint8_t(((s[l] >> shift) & 0xF) | (((b.qh[l] >> j) & 1) << 4));
  }
}

void pack_q5_K_row(const quant::block_q5_K& b, int r, Q5KBlock& o) {
  pack_k_header_row(b, r, o);
  uint8_t q[quant::kQK_K];
  q5_K_values(b, q);
  for (int j = 0; j < 8; ++j) {
    for (int p = 0; p < 8; ++p) {
      for (int k = 0; k < 4; ++k) o.q[j][p][r][k] = q[32 * j + 4 * p + k];
    }
  }
}

// Row r of a Q50Block from a block_q5_0: its values q - 16 as quant::q5_0_to_q8_0 reads them, split
// into the nibble lines and the inverted bit-4 plane of Q50Block.
void pack_q5_0_row(const quant::block_q5_0& b, int r, Q50Block& o) {
  quant::block_q8_0 v;
  quant::q5_0_to_q8_0(&b, &v, quant::kQK8_0);
  o.d[r] = b.d;
  int sum = 0;
  for (int p = 0; p < 8; ++p) {
    for (int k = 0; k < 4; ++k) {
      const int q = v.qs[4 * p + k] + 16;  // 0..31
      o.ql[p % 4][r][k] |= uint8_t((q & 0xF) << (4 * (p / 4)));
      o.nh[r][k] |= uint8_t((1 - (q >> 4)) << p);
      sum += v.qs[4 * p + k];
    }
  }
  o.sum[r] = int16_t(sum);
}

}  // namespace

AlignedArray<Q80Block> pack_q8_0(const quant::block_q8_0* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q80Block>(src, n_out, n_in, pack_q8_0_row, quant::kQK8_0);
}

AlignedArray<Q5KBlock> pack_q5_K(const quant::block_q5_K* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q5KBlock>(src, n_out, n_in, pack_q5_K_row);
}

AlignedArray<Q50Block> pack_q5_0(const quant::block_q5_0* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q50Block>(src, n_out, n_in, pack_q5_0_row, quant::kQK8_0);
}

void make_u8_q8_0(const quant::block_q8_0* x, int64_t n_tokens, int64_t n_b, uint8_t* xu8) {
  for (int64_t i = 0; i < n_tokens * n_b; ++i) {
    for (int k = 0; k < quant::kQK8_0; ++k) xu8[i * quant::kQK8_0 + k] = uint8_t(x[i].qs[k]) ^ 0x80;
  }
}

}  // namespace dllm::cpu::qgemm
