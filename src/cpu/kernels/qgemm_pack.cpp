// Load-time repacking of GGUF Q4_K / Q6_K rows into the interleaved group layout of qgemm.h, and the
// per-call activation sums of 32. Portable C++ (no intrinsics); runs once per matrix at load.
// The GGUF block layouts are read as ggml-common.h describes them (see quant/blocks.h).
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/qgemm_pack_walk.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

void AlignedFree::operator()(void* p) const {
  std::free(p);
}

template <typename T>
AlignedArray<T> aligned_zeros(size_t n) {
  const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, bytes == 0 ? 64 : bytes);
  return AlignedArray<T>(static_cast<T*>(p));
}
template AlignedArray<Q4KBlock> aligned_zeros<Q4KBlock>(size_t);
template AlignedArray<Q6KBlock> aligned_zeros<Q6KBlock>(size_t);
template AlignedArray<Q6K8Block> aligned_zeros<Q6K8Block>(size_t);
template AlignedArray<Q80Block> aligned_zeros<Q80Block>(size_t);
template AlignedArray<Q5KBlock> aligned_zeros<Q5KBlock>(size_t);
template AlignedArray<Q50Block> aligned_zeros<Q50Block>(size_t);

namespace {

// The 256 four-bit values (0..15) of a block_q4_K, in order: sub-block j (values 32j..32j+31) lives in
// bytes 32 (j / 2) .. + 31 of qs, in the low nibbles for even j, the high nibbles for odd j.
void q4_K_values(const quant::block_q4_K& b, uint8_t* q) {
  for (int j = 0; j < 8; ++j) {
    const uint8_t* s = b.qs + 32 * (j / 2);
    const int shift = 4 * (j & 1);
    for (int i = 0; i < 32; ++i) q[32 * j + i] = (s[i] >> shift) & 0xF;
  }
}

// The 256 six-bit values (0..63) of a block_q6_K, in order. Per 128-value half n: ql[64n + l] holds
// values l (low nibble) and l + 64 (high nibble), ql[64n + 32 + l] values l + 32 and l + 96; qh[32n + l]
// holds their top 2 bits in bits 0-1, 2-3, 4-5, 6-7 for values l, l + 32, l + 64, l + 96.
void q6_K_values(const quant::block_q6_K& b, uint8_t* q) {
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = b.ql + 64 * n;
    const uint8_t* qh = b.qh + 32 * n;
    uint8_t* out = q + 128 * n;
    for (int l = 0; l < 32; ++l) {
      out[l] = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4);
      out[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
      out[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      out[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

// Row r's share of one interleaved nibble plane (Q4KBlock::qs[j], Q6KBlock::ql[s]) from 32
// consecutive values v[0..31] (their low 4 bits): plane[p][r][b] = v[4p + b] | v[16 + 4p + b] << 4.
void store_nibble_pairs(const uint8_t* v, uint8_t (&plane)[4][kRows][4], int r) {
  for (int p = 0; p < 4; ++p) {
    for (int b = 0; b < 4; ++b)
      plane[p][r][b] = uint8_t((v[4 * p + b] & 0xF) | ((v[16 + 4 * p + b] & 0xF) << 4));
  }
}

// Row r of a Q4KBlock from that row's block_q4_K.
void pack_q4_K_row(const quant::block_q4_K& b, int r, Q4KBlock& o) {
  pack_k_header_row(b, r, o);
  uint8_t q[quant::kQK_K];
  q4_K_values(b, q);
  for (int j = 0; j < 8; ++j) store_nibble_pairs(q + 32 * j, o.qs[j], r);
}

// Row r of a Q6KBlock from that row's block_q6_K: the low 4 bits of each value in ql (as Q4_K's qs),
// the top 2 bits in qh.
void pack_q6_K_row(const quant::block_q6_K& b, int r, Q6KBlock& o) {
  o.d[r] = quant::fp16_to_fp32(b.d);
  uint8_t q[quant::kQK_K];
  q6_K_values(b, q);
  for (int s = 0; s < 8; ++s) {
    o.scales[s][r][0] = b.scales[2 * s];
    o.scales[s][r][1] = b.scales[2 * s + 1];
    const uint8_t* v = q + 32 * s;
    store_nibble_pairs(v, o.ql[s], r);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        o.qh[s][h][r][k] = uint8_t((v[8 * h + k] >> 4) | ((v[16 + 8 * h + k] >> 4) << 2) |
                                   ((v[8 * h + 4 + k] >> 4) << 4) | ((v[16 + 8 * h + 4 + k] >> 4) << 6));
      }
    }
  }
}

}  // namespace

AlignedArray<Q4KBlock> pack_q4_K(const quant::block_q4_K* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q4KBlock>(src, n_out, n_in, pack_q4_K_row);
}

AlignedArray<Q6KBlock> pack_q6_K(const quant::block_q6_K* src, int64_t n_out, int64_t n_in) {
  return pack_groups<Q6KBlock>(src, n_out, n_in, pack_q6_K_row);
}

void make_bs32(const quant::block_q8_K* x, int64_t n_tokens, int64_t n_sb, int16_t* bs32) {
  for (int64_t i = 0; i < n_tokens * n_sb; ++i) {
    for (int j = 0; j < 8; ++j) bs32[i * 8 + j] = int16_t(x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
  }
}

}  // namespace dllm::cpu::qgemm
