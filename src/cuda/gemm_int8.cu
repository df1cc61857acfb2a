// Quantized GEMM on int8 tensor cores: Q4_K / Q6_K weights (read as stored) times int8 activations
// (kernels.h legend), f32 out. Also the one-mma test hooks for the fragment layouts.
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k32" / "mma.m16n8k16", integer types),
// lane = 4 * group + tig (group = lane / 4, tig = lane % 4):
//   m16n8k32: A (16 x 32, row) 4 regs of 4 int8: reg0 row group cols 4 tig..+3, reg1 row group + 8
//             same cols, reg2 / reg3 the same with cols + 16. B (32 x 8, col) 2 regs: reg0 rows
//             (k) 4 tig..+3 of col group, reg1 rows + 16. C (16 x 8) 4 int32: c0 / c1 row group cols
//             2 tig, 2 tig + 1; c2 / c3 row group + 8.
//   m16n8k16: A 2 regs (reg0 row group cols 4 tig..+3, reg1 row group + 8), B 1 reg (rows 4 tig..+3
//             of col group), C as above.
// So with A = 16 weight rows and B = 8 tokens, each thread loads 4 consecutive int8 of a weight row
// and 4 consecutive int8 of a token row: one 32-bit load each.
//
// Tiling: a block of 4 warps computes 64 output rows x 32 tokens; warp w owns rows 16 w..16 w + 15 and
// all 4 token tiles of 8, so each weight fragment is decoded once and used 4 times. Weights come
// straight from global memory (L1/L2 cached); activations of one token tile are shared by the 4
// warps through L1. A first version: no shared-memory staging, no software pipelining.
//
// Q4_K (x = d sc_j q - dmin m_j, sub-blocks of 32): per sub-block j one m16n8k32 gives
// S = sum q a (integer); with the activation group {da, da * sum a} (the same 32 values):
//   y += (d sc_j) da S - (dmin m_j) (da sum a)
// so the min term costs one multiply-add per sub-block and output (folded through the activation sums).
// Q6_K (x = d sc_j (q - 32), sub-blocks of 16): q - 32 is formed in the fragment with a per-byte
// subtraction (__vsub4: values 0..63 - 32 fit int8), then one m16n8k16 per sub-block:
//   y += (d sc_j) da S     (da of the 32-value activation group holding the 16)
#include "cuda/common.cuh"
#include "cuda/gemm_frag.h"
#include "cuda/kernels.h"

namespace dllm::cuda::kern {

namespace {

using frag::ld32;

__device__ __forceinline__ void mma_k32(int (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  __trap();  // built only for sm_80+; kept so a stray older target fails loudly, not silently
#endif
}

__device__ __forceinline__ void mma_k16(int (&c)[4], const uint32_t (&a)[2], uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(b));
#else
  __trap();
#endif
}

constexpr int kWarps = 4;
constexpr int kRowsPerBlock = 16 * kWarps;
constexpr int kTokTiles = kTokenTile / 8;

template <WType kType>
__global__ void __launch_bounds__(32 * kWarps)
    gemm_int8_kernel(const uint8_t* w, int64_t row_bytes, int64_t n_out, int64_t n_in, const int8_t* q,
                     const float* ds, int64_t n_tok, float* y, int64_t ldy) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, tig = lane % 4;
  const int64_t row_a = blockIdx.x * int64_t(kRowsPerBlock) + 16 * warp + group;
  const int64_t row_b = row_a + 8;
  // Rows past n_out read the last row (results discarded) so every lane takes part in the mma.
  const uint8_t* wa = w + min(row_a, n_out - 1) * row_bytes;
  const uint8_t* wb = w + min(row_b, n_out - 1) * row_bytes;
  const int64_t tok0 = blockIdx.y * kTokenTile;
  const int64_t n_groups = n_in / 32;
  // This block's token tile: B fragments and activation scales by gemm_frag.h's offsets from here;
  // C columns are tokens tok0 + 8 nt + 2 tig + {0, 1}.
  const int8_t* qt0 = q + tok0 * n_in;
  const float* ds_t0 = ds + 2 * tok0 * n_groups;

  float acc[kTokTiles][4] = {};
  const int64_t n_sb = n_in / 256;
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    if constexpr (kType == WType::kQ4_K) {
      const uint8_t* ba = wa + sb * kQ4KBytes;
      const uint8_t* bb = wb + sb * kQ4KBytes;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        uint32_t a[4];
        frag::q4k_a_frag(ba, bb, j, tig, a);
        float fa, fb, mfa, mfb;
        frag::q4k_factors(ba, j, fa, mfa);
        frag::q4k_factors(bb, j, fb, mfb);
        const int64_t g = sb * 8 + j;  // activation group of these 32 values
#pragma unroll
        for (int nt = 0; nt < kTokTiles; ++nt) {
          const int8_t* qt = qt0 + frag::b_offset_k32(n_in, nt, group, tig, g);
          const uint32_t b[2] = {frag::ld32(qt), frag::ld32(qt + 16)};
          int c[4] = {0, 0, 0, 0};
          mma_k32(c, a, b);
          const float* ds0 = ds_t0 + frag::ds_index(n_groups, nt, tig, g);
          frag::accumulate(acc[nt], c, fa, fb, mfa, mfb, ds0, ds0 + 2 * n_groups);
        }
      }
    } else {  // kQ6_K, padded blocks: ql[128] qh[64] scales[16] d
      const uint8_t* ba = wa + sb * kQ6KPaddedBytes;
      const uint8_t* bb = wb + sb * kQ6KPaddedBytes;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        uint32_t a[2];
        frag::q6k_a_frag(ba, bb, j, tig, a);
        const float fa = frag::q6k_factor(ba, j), fb = frag::q6k_factor(bb, j);
        const int64_t g = sb * 8 + j / 2;
#pragma unroll
        for (int nt = 0; nt < kTokTiles; ++nt) {
          const uint32_t b = frag::ld32(qt0 + frag::b_offset_k16(n_in, nt, group, tig, sb, j));
          int c[4] = {0, 0, 0, 0};
          mma_k16(c, a, b);
          const float* ds0 = ds_t0 + frag::ds_index(n_groups, nt, tig, g);
          frag::accumulate(acc[nt], c, fa, fb, 0.0f, 0.0f, ds0, ds0 + 2 * n_groups);
        }
      }
    }
  }
#pragma unroll
  for (int nt = 0; nt < kTokTiles; ++nt) {
    const int64_t t0 = tok0 + 8 * nt + 2 * tig;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t t = t0 + (e & 1);
      const int64_t o = e < 2 ? row_a : row_b;
      if (t < n_tok && o < n_out) y[t * ldy + o] = acc[nt][e];
    }
  }
}

__global__ void mma_k32_test_kernel(const int8_t* a, const int8_t* b, int32_t* c) {
  const int lane = threadIdx.x, group = lane / 4, tig = lane % 4;
  const uint32_t fa[4] = {ld32(a + group * 32 + 4 * tig), ld32(a + (group + 8) * 32 + 4 * tig),
                          ld32(a + group * 32 + 16 + 4 * tig), ld32(a + (group + 8) * 32 + 16 + 4 * tig)};
  const uint32_t fb[2] = {ld32(b + group * 32 + 4 * tig), ld32(b + group * 32 + 16 + 4 * tig)};
  int acc[4] = {0, 0, 0, 0};
  mma_k32(acc, fa, fb);
  c[group * 8 + 2 * tig] = acc[0];
  c[group * 8 + 2 * tig + 1] = acc[1];
  c[(group + 8) * 8 + 2 * tig] = acc[2];
  c[(group + 8) * 8 + 2 * tig + 1] = acc[3];
}

__global__ void mma_k16_test_kernel(const int8_t* a, const int8_t* b, int32_t* c) {
  const int lane = threadIdx.x, group = lane / 4, tig = lane % 4;
  const uint32_t fa[2] = {ld32(a + group * 16 + 4 * tig), ld32(a + (group + 8) * 16 + 4 * tig)};
  const uint32_t fb = ld32(b + group * 16 + 4 * tig);
  int acc[4] = {0, 0, 0, 0};
  mma_k16(acc, fa, fb);
  c[group * 8 + 2 * tig] = acc[0];
  c[group * 8 + 2 * tig + 1] = acc[1];
  c[(group + 8) * 8 + 2 * tig] = acc[2];
  c[(group + 8) * 8 + 2 * tig + 1] = acc[3];
}

}  // namespace

void gemm_int8(WType type, const void* w, int64_t row_bytes, int64_t n_out, int64_t n_in, const int8_t* q,
               const float* ds, int64_t n_tok, float* y, int64_t ldy, cudaStream_t stream) {
  if (n_tok <= 0 || n_out <= 0) return;
  const dim3 grid(static_cast<unsigned>((n_out + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>((n_tok + kTokenTile - 1) / kTokenTile));
  const auto* wb = static_cast<const uint8_t*>(w);
  if (type == WType::kQ4_K) {
    gemm_int8_kernel<WType::kQ4_K>
        <<<grid, 32 * kWarps, 0, stream>>>(wb, row_bytes, n_out, n_in, q, ds, n_tok, y, ldy);
  } else if (type == WType::kQ6_K) {
    gemm_int8_kernel<WType::kQ6_K>
        <<<grid, 32 * kWarps, 0, stream>>>(wb, row_bytes, n_out, n_in, q, ds, n_tok, y, ldy);
  } else {
    throw Error("gemm_int8: only Q4_K and Q6_K weights have an int8 kernel");
  }
  DLLM_CHECK_LAUNCH("gemm_int8_kernel");
}

void mma_s8_k32(const int8_t* a, const int8_t* b, int32_t* c, cudaStream_t stream) {
  mma_k32_test_kernel<<<1, 32, 0, stream>>>(a, b, c);
  DLLM_CHECK_LAUNCH("mma_k32_test_kernel");
}

void mma_s8_k16(const int8_t* a, const int8_t* b, int32_t* c, cudaStream_t stream) {
  mma_k16_test_kernel<<<1, 32, 0, stream>>>(a, b, c);
  DLLM_CHECK_LAUNCH("mma_k16_test_kernel");
}

}  // namespace dllm::cuda::kern
