// The portable panel GEMM kernels (f16 rounding by quant/quant.h) and the choice of a set per Isa.
#include "cpu/kernels/panel_gemm_kernels.h"

#include <algorithm>

#include "quant/quant.h"

namespace dllm::cpu {

namespace {

constexpr int kMr = 4, kNr = 16;

void round_f16_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(x[i]));
}

void pack_b_row_scalar(const float* row, int64_t n, float* bp, int64_t ld) {
  for (int64_t s = 0; s * kNr < n; ++s) {
    float* dst = bp + s * ld;
    const int64_t nc = std::min<int64_t>(kNr, n - s * kNr);
    for (int64_t j = 0; j < kNr; ++j) dst[j] = j < nc ? row[s * kNr + j] : 0.0f;
    round_f16_scalar(dst, nc);
  }
}

void tile_scalar(const float* a, int64_t lda, const float* bp, int64_t kc, float* c, int64_t ldc) {
  float acc[kMr][kNr];
  for (int r = 0; r < kMr; ++r)
    for (int j = 0; j < kNr; ++j) acc[r][j] = c[r * ldc + j];
  for (int64_t p = 0; p < kc; ++p)
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) acc[r][j] += a[r * lda + p] * bp[p * kNr + j];
  for (int r = 0; r < kMr; ++r)
    for (int j = 0; j < kNr; ++j) c[r * ldc + j] = acc[r][j];
}

const PanelGemmKernels kScalarKernels = {kMr, kNr, round_f16_scalar, pack_b_row_scalar, tile_scalar};

}  // namespace

const PanelGemmKernels& panel_gemm_kernels(Isa isa) {
  switch (vector_isa(isa)) {
    case Isa::kAvx512Vnni:
      return simd::panel_gemm_kernels_avx512();
    case Isa::kAvx2:
    case Isa::kAvxVnni:
      return simd::panel_gemm_kernels_avx2();
    case Isa::kScalar:
    case Isa::kAmx:  // vector_isa maps it to kAvx512Vnni
      break;
  }
  return kScalarKernels;
}

}  // namespace dllm::cpu
