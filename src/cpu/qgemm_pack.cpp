// Load-time repacking of GGUF Q4_K / Q6_K rows into the interleaved group layout of qgemm.h, and the
// per-call activation sums of 32. Portable C++ (no intrinsics); runs once per matrix at load.
// The GGUF block layouts are read as ggml-common.h describes them (see quant/blocks.h).
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu/qgemm.h"
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

namespace {

// The 6-bit scale and min of sub-block j from block_q4_K::scales (ggml's get_scale_min_k4): bytes 0-3
// hold sc[0..3] in bits 0-5, bytes 4-7 hold m[0..3]; sub-blocks 4..7 keep their low 4 bits in bytes
// 8-11 (sc low nibble, m high nibble) and their top 2 bits in bits 6-7 of bytes 0-3 (sc) and 4-7 (m).
void q4_K_scale_min(const uint8_t* s, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
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

}  // namespace

AlignedArray<Q4KBlock> pack_q4_K(const quant::block_q4_K* src, int64_t n_out, int64_t n_in) {
  const int64_t n_sb = n_in / quant::kQK_K;
  const int64_t n_groups = (n_out + kRows - 1) / kRows;
  AlignedArray<Q4KBlock> dst = aligned_zeros<Q4KBlock>(size_t(n_groups * n_sb));
  Q4KBlock* out = dst.get();
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t sb = 0; sb < n_sb; ++sb) {
      Q4KBlock& o = out[g * n_sb + sb];
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = g * kRows + r;
        if (row >= n_out) break;  // padding rows stay zero (d = 0)
        const quant::block_q4_K& b = src[row * n_sb + sb];
        o.d[r] = b.d;
        o.dmin[r] = b.dmin;
        uint8_t m[8];
        for (int j = 0; j < 8; ++j) q4_K_scale_min(b.scales, j, &o.scales[j][r], &m[j]);
        for (int p = 0; p < 4; ++p) {
          o.mins[p][r][0] = m[2 * p];
          o.mins[p][r][1] = m[2 * p + 1];
        }
        // Sub-block j lives in bytes 32 (j / 2) .. + 31 of qs, low nibbles for even j, high for odd.
        for (int j = 0; j < 8; ++j) {
          const uint8_t* s = b.qs + 32 * (j / 2);
          const int shift = 4 * (j & 1);
          for (int p = 0; p < 4; ++p) {
            for (int k = 0; k < 4; ++k) {
              const uint8_t lo = (s[4 * p + k] >> shift) & 0xF;
              const uint8_t hi = (s[16 + 4 * p + k] >> shift) & 0xF;
              o.qs[j][p][r][k] = uint8_t(lo | (hi << 4));
            }
          }
        }
      }
    }
  }
  return dst;
}

AlignedArray<Q6KBlock> pack_q6_K(const quant::block_q6_K* src, int64_t n_out, int64_t n_in) {
  const int64_t n_sb = n_in / quant::kQK_K;
  const int64_t n_groups = (n_out + kRows - 1) / kRows;
  AlignedArray<Q6KBlock> dst = aligned_zeros<Q6KBlock>(size_t(n_groups * n_sb));
  Q6KBlock* out = dst.get();
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t sb = 0; sb < n_sb; ++sb) {
      Q6KBlock& o = out[g * n_sb + sb];
      for (int r = 0; r < kRows; ++r) {
        const int64_t row = g * kRows + r;
        if (row >= n_out) break;
        const quant::block_q6_K& b = src[row * n_sb + sb];
        o.d[r] = quant::fp16_to_fp32(b.d);
        uint8_t q[quant::kQK_K];
        q6_K_values(b, q);
        for (int s = 0; s < 8; ++s) {
          o.scales[s][r][0] = b.scales[2 * s];
          o.scales[s][r][1] = b.scales[2 * s + 1];
          const uint8_t* v = q + 32 * s;
          for (int p = 0; p < 4; ++p) {
            for (int k = 0; k < 4; ++k) {
              o.ql[s][p][r][k] = uint8_t((v[4 * p + k] & 0xF) | ((v[16 + 4 * p + k] & 0xF) << 4));
            }
          }
          for (int h = 0; h < 2; ++h) {
            for (int k = 0; k < 4; ++k) {
              o.qh[s][h][r][k] =
                  uint8_t((v[8 * h + k] >> 4) | ((v[16 + 8 * h + k] >> 4) << 2) |
                          ((v[8 * h + 4 + k] >> 4) << 4) | ((v[16 + 8 * h + 4 + k] >> 4) << 6));
            }
          }
        }
      }
    }
  }
  return dst;
}

void make_bs32(const quant::block_q8_K* x, int64_t n_tokens, int64_t n_sb, int16_t* bs32) {
  for (int64_t i = 0; i < n_tokens * n_sb; ++i) {
    for (int j = 0; j < 8; ++j) bs32[i * 8 + j] = int16_t(x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
  }
}

}  // namespace dllm::cpu::qgemm
