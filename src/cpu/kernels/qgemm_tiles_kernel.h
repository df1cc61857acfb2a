// The quantized GEMM on Intel AMX tiles for Q6_K and Q8_0, one tile product per scale block (Q4_K and
// Q5_K: qgemm_tiles_scaled.h), written once over a tile unit U (cpu/kernels/tile_unit.h):
// TileHw (the instructions, qgemm_tiles_amx.cpp) or TileEmu (their scalar emulation,
// qgemm_tiles_emu.cpp, which the tests run on any machine). Included only by those two files.
//
// Shape (docs/kernels.md, "Intel AMX tiles"): C[token][row] += A[token][k] * B[k][row] with
//   A = 16 tokens x one scale block of activation bytes, loaded in place from the Q8_K (or Q8_0)
//       rows (tile row stride = one activation row in bytes), signed;
//   B = that scale block of one 16-row group in the VNNI layout (B row k = 4 consecutive weights of
//       each of the 16 rows: a 64-byte line of the packed layouts as it is stored);
//   C = 16 tokens x 16 rows of int32.
// One tdpb*d covers exactly one scale block (Q6_K: a sub-block of 16; Q8_0: a block of 32), so
// its int32 result is the sub-block's exact sum(q * x); it is stored and multiplied by the row's
// sub-block scale into S in int32, as the AVX-512 path's vpmulld does. A work step is up to 2 groups
// (B in tmm0, tmm1) x 2 token tiles (A in tmm2, tmm3): 4 C tiles (tmm4..7), so every A and B load
// feeds two tdpb*d. The zero points and f32 step per super-block are those of the scalar kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/tile_unit.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm::tiles_kernel {

using tiles::Dp;
using tiles::tmm_a;
using tiles::tmm_b;
using tiles::tmm_c;

constexpr int kTok = 16;  ///< tokens per A / C tile (tile rows)

/// A format: the packed block, scale blocks per block (kSubs) of kK values each (A colsb = kK bytes,
/// B rows = kK / 4), the dot product (A = activations, B = weights), whether the activations are
/// Q8_0 (else Q8_K), and the row stride of B's lines. b_lines() and sub_scale() below say where a
/// scale block's B lines are and what its scale is.
template <class Blk, int Subs, int K, Dp Op, bool Q8_0, int64_t BStride>
struct Fmt {
  using Block = Blk;
  static constexpr int kSubs = Subs, kK = K;
  static constexpr Dp kOp = Op;
  static constexpr bool kQ8_0 = Q8_0;
  static constexpr int64_t kBStride = BStride;
};

/// Q6_K over Q6K8Block: q - 32 (s8) times Q8_K (s8): tdpbssd, so the -32 offset is in the products
/// and no activation sums are needed. Sub-block j = 2s + h has its 4 lines at q[s][p][h], 128 bytes
/// apart: B is loaded with stride 128.
using Q6KFmt = Fmt<Q6K8Block, 16, 16, Dp::kSS, false, 2 * kRows * 4>;
/// Q8_0: q (s8) times Q8_0 activations (s8): tdpbssd, one block of 32 per "super-block".
using Q80Fmt = Fmt<Q80Block, 1, 32, Dp::kSS, true, 64>;

inline const void* b_lines(const Q6K8Block& blk, int j) {
  return blk.q[j / 2][0][j % 2];
}
inline const void* b_lines(const Q80Block& blk, int) {
  return blk.qs;
}
inline int32_t sub_scale(const Q6K8Block& blk, int j, int r) {
  return blk.scales[j / 2][r][j % 2];
}
inline int32_t sub_scale(const Q80Block&, int, int) {
  return 1;
}

template <class U, Dp Op, int S, int P>
inline void dot() {
  U::template dp<Op, tmm_c(S, P), tmm_a(S), tmm_b(P)>();
}

/// y = W x for the groups and tokens in `a` (GemmArgs as for the other kernels of the format:
/// Q6_K reads x, Q8_0 reads x80). Leaves the tile unit released.
template <class U, class F>
void gemm(const GemmArgs& a) {
  using Block = typename F::Block;
  const auto* w = static_cast<const Block*>(a.w);
  const int64_t n_sb = a.n_sb;
  // A operand: the activation bytes of token t, block b, scale block j, and the tile row stride.
  const uint8_t* x_bytes;
  int64_t x_block, x_qs;  // bytes per activation block, offset of qs in it
  if constexpr (F::kQ8_0) {
    x_bytes = reinterpret_cast<const uint8_t*>(a.x80);
    x_block = sizeof(quant::block_q8_0);
    x_qs = offsetof(quant::block_q8_0, qs);
  } else {
    x_bytes = reinterpret_cast<const uint8_t*>(a.x);
    x_block = sizeof(quant::block_q8_K);
    x_qs = offsetof(quant::block_q8_K, qs);
  }
  const int64_t x_stride = n_sb * x_block;
  auto a_ptr = [&](int64_t t, int64_t b, int j) {
    return x_bytes + t * x_stride + b * x_block + x_qs + F::kK * j;
  };

  alignas(64) int32_t c[2][2][kTok][kRows];  // [token tile][group]: the C tiles of one scale block
  alignas(64) int32_t s_int[2][2][kTok][kRows];
  alignas(64) float acc[2][2][kTok][kRows];
  tiles::StepConfig<U> steps;

  for (int64_t g0 = a.g_begin; g0 < a.g_end; g0 += 2) {
    const int np = a.g_end - g0 >= 2 ? 2 : 1;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 2 * kTok) {
      const int m[2] = {int(std::min<int64_t>(kTok, a.n_tokens - t0)),
                        int(std::clamp<int64_t>(a.n_tokens - t0 - kTok, 0, kTok))};
      const int ns = m[1] > 0 ? 2 : 1;
      steps.load(ns, m, np, F::kK);
      std::memset(acc, 0, sizeof acc);
      for (int64_t b = 0; b < n_sb; ++b) {
        const Block* blk[2] = {w + g0 * n_sb + b, w + (g0 + np - 1) * n_sb + b};
        std::memset(s_int, 0, sizeof s_int);
        for (int j = 0; j < F::kSubs; ++j) {
          for (int p = 0; p < np; ++p) {
            const void* src = b_lines(*blk[p], j);
            if (p == 0) {
              U::template load<tmm_b(0)>(src, F::kBStride);
            } else {
              U::template load<tmm_b(1)>(src, F::kBStride);
            }
          }
          U::template load<tmm_a(0)>(a_ptr(t0, b, j), x_stride);
          if (ns > 1) U::template load<tmm_a(1)>(a_ptr(t0 + kTok, b, j), x_stride);
          U::template zero<tmm_c(0, 0)>();
          if (np > 1) U::template zero<tmm_c(0, 1)>();
          if (ns > 1) U::template zero<tmm_c(1, 0)>();
          if (ns > 1 && np > 1) U::template zero<tmm_c(1, 1)>();
          dot<U, F::kOp, 0, 0>();
          if (np > 1) dot<U, F::kOp, 0, 1>();
          if (ns > 1) dot<U, F::kOp, 1, 0>();
          if (ns > 1 && np > 1) dot<U, F::kOp, 1, 1>();
          U::template store<tmm_c(0, 0)>(c[0][0], kRows * 4);
          if (np > 1) U::template store<tmm_c(0, 1)>(c[0][1], kRows * 4);
          if (ns > 1) U::template store<tmm_c(1, 0)>(c[1][0], kRows * 4);
          if (ns > 1 && np > 1) U::template store<tmm_c(1, 1)>(c[1][1], kRows * 4);
          // S += sc[j] * sum(q x), per row, in int32 (exact: docs/kernels.md bounds |S| < 2^31).
          for (int p = 0; p < np; ++p) {
            int32_t sc[kRows];
            for (int r = 0; r < kRows; ++r) sc[r] = sub_scale(*blk[p], j, r);
            for (int s = 0; s < ns; ++s) {
              for (int t = 0; t < m[s]; ++t) {
                for (int r = 0; r < kRows; ++r) s_int[s][p][t][r] += sc[r] * c[s][p][t][r];
              }
            }
          }
        }
        // The block's f32 step, as the scalar kernels (qgemm_scalar.cpp, qgemm_bytes_scalar.cpp).
        for (int p = 0; p < np; ++p) {
          const Block& bk = *blk[p];
          float d[kRows];
          for (int r = 0; r < kRows; ++r) {
            if constexpr (F::kQ8_0) {
              d[r] = quant::fp16_to_fp32(bk.d[r]);
            } else {
              d[r] = bk.d[r];  // Q6K8Block keeps d in f32
            }
          }
          for (int s = 0; s < ns; ++s) {
            for (int t = 0; t < m[s]; ++t) {
              const int64_t tok = t0 + s * kTok + t;
              if constexpr (F::kQ8_0) {
                const float dx = quant::fp16_to_fp32(a.x80[tok * n_sb + b].d);
                for (int r = 0; r < kRows; ++r) acc[s][p][t][r] += (d[r] * dx) * float(s_int[s][p][t][r]);
              } else {
                const float dx = a.x[tok * n_sb + b].d;
                for (int r = 0; r < kRows; ++r) acc[s][p][t][r] += dx * (d[r] * float(s_int[s][p][t][r]));
              }
            }
          }
        }
      }
      for (int s = 0; s < ns; ++s) {
        for (int t = 0; t < m[s]; ++t) {
          float* yt = a.y + (t0 + s * kTok + t) * a.ldy;
          for (int p = 0; p < np; ++p) {
            for (int r = 0; r < kRows; ++r) {
              const int64_t o = (g0 + p) * kRows + r;
              if (o >= a.o_begin && o < a.o_end) yt[o] = acc[s][p][t][r];
            }
          }
        }
      }
    }
  }
  steps.release();
}

/// Tests only: one tdpb*d through U with the register plan's first tiles (C = tmm4, A = tmm2,
/// B = tmm0): c (m x 16 int32, row stride 64 bytes) = a (m x k_bytes, row stride lda) times b (k_bytes / 4
/// x 64 bytes, packed), starting from zero.
template <class U>
void single_dp(Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b, int32_t* c) {
  tiles::TileConfig cfg;
  cfg.set(tmm_a(0), m, k_bytes);
  cfg.set(tmm_b(0), k_bytes / 4, kRows * 4);
  cfg.set(tmm_c(0, 0), m, kRows * 4);
  U::config(cfg);
  U::template load<tmm_a(0)>(a, lda);
  U::template load<tmm_b(0)>(b, kRows * 4);
  U::template zero<tmm_c(0, 0)>();
  // In the order of Dp's values.
  void (*const dots[4])() = {dot<U, Dp::kSS, 0, 0>, dot<U, Dp::kSU, 0, 0>, dot<U, Dp::kUS, 0, 0>,
                             dot<U, Dp::kUU, 0, 0>};
  dots[int(op)]();
  U::template store<tmm_c(0, 0)>(c, kRows * 4);
  U::release();
}

}  // namespace dllm::cpu::qgemm::tiles_kernel
