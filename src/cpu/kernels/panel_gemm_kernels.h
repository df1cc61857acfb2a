// The micro-kernels of cpu/panel_gemm.h, one set per instruction-set path: a register-blocked f32
// tile (mr rows x nr columns, nr = two vectors) over A's rows and a packed strip of B, and the f16
// rounding of B. kScalar is the portable reference; every path sums each output element over the
// ids in increasing order (one multiply-add per id, fused on the SIMD paths), so a path's result
// does not depend on how the driver cuts the ids into panels or the columns among threads.
#pragma once

#include <cstdint>
#include <vector>

#include "base/isa.h"

namespace dllm::cpu {

/// Operands (cpu/panel_gemm.cpp): a row block of A read in place, a[r * lda + p] = A[row0 + r][id p]
/// for the panel's kc ids p (or a zero-padded copy of it), and B packed, strip s of a panel:
/// bp[p * nr + j] = f16(B[id p][s * nr + j]), columns past n zero.
struct PanelGemmKernels {
  int mr = 0;  ///< rows of a tile
  int nr = 0;  ///< columns of a tile (two vectors of the path)
  /// x[i] = f16(x[i]) for i < n: rounded to the nearest binary16 value, ties to even (as
  /// quant::fp32_to_fp16, and ggml's F16 operands), back in f32.
  void (*round_f16)(float* x, int64_t n);
  /// Writes the columns of one B row into the strips: bp[s * ld + j] = f16(row[s * nr + j]) for
  /// s < ceil(n / nr), j < nr (0 where s * nr + j >= n).
  void (*pack_b_row)(const float* row, int64_t n, float* bp, int64_t ld);
  /// c[r * ldc + j] += sum over p < kc, in increasing p, of a[r * lda + p] * bp[p * nr + j], for
  /// r < mr, j < nr: f32 accumulation in the accumulator loaded from c.
  void (*tile)(const float* a, int64_t lda, const float* bp, int64_t kc, float* c, int64_t ldc);
};

/// The set for `isa` (kAvxVnni uses the AVX2 set, kAmx the AVX-512 set: these loops need only FMA and
/// F16C).
const PanelGemmKernels& panel_gemm_kernels(Isa isa);

struct PanelGemm;

// What both drivers (cpu/panel_gemm.cpp, kernels/panel_gemm_amx.cpp) plan the same way.

/// Width of the column blocks: the fewest per thread that keep each within kBlockCols, as even as
/// whole units of `granule` columns allow (so the blocks are a multiple of the threads in number).
int64_t panel_block_width(int64_t n, int threads, int64_t granule);

/// A's rows for the panel ids[0..kc): read in place where the ids are consecutive (lda = g.lda),
/// else gathered into `gathered`, row i at i * ld (lda = ld). Returns the first row's start.
const float* panel_a_rows(const PanelGemm& g, const int32_t* ids, int64_t kc, int64_t ld,
                          std::vector<float>& gathered, int64_t& lda);

namespace simd {
// Per-ISA sets (panel_gemm_avx2.cpp, panel_gemm_avx512.cpp).
const PanelGemmKernels& panel_gemm_kernels_avx2();
const PanelGemmKernels& panel_gemm_kernels_avx512();
/// The whole of panel_gemm on AMX-BF16 tiles (panel_gemm_amx.cpp): each operand split exactly into two
/// bf16 parts, four exact products per id summed in f32 (so within the bound of a sum of 4 k + 1
/// terms). Run only where amx_bf16_supported() (base/isa.h).
void panel_gemm_amx_bf16(const PanelGemm& g, int n_threads);
}  // namespace simd

}  // namespace dllm::cpu
