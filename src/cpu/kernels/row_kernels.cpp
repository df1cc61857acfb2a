// The portable row kernels (cpu/ops.h, quant/quant.h) and the choice of a set per Isa.
#include "cpu/kernels/row_kernels.h"

#include <cmath>

#include "cpu/ops.h"
#include "quant/quant.h"

namespace dllm::cpu {

namespace {

void attention_head_scalar(const AttentionHead& a) {
  for (int64_t t = 0; t < a.n_q; ++t) {
    const forward::KeyRange r = a.ranges ? a.ranges[t] : forward::KeyRange{0, static_cast<int32_t>(a.n_kv)};
    attention_row(a.q + t * a.q_stride, a.k + r.begin * a.kv_stride, a.kv_stride, a.v + r.begin * a.kv_stride,
                  a.kv_stride, r.end - r.begin, a.head_dim, a.scale, a.scratch, a.out + t * a.out_stride);
  }
}

void dot_f32_x4_scalar(const float* const a[4], const float* b, int64_t n, float out[4]) {
  for (int j = 0; j < 4; ++j) out[j] = dot_f32(a[j], b, n);
}

void dot_f32_x4x2_scalar(const float* const a[4], const float* b0, const float* b1, int64_t n, float out[8]) {
  dot_f32_x4_scalar(a, b0, n, out);
  dot_f32_x4_scalar(a, b1, n, out + 4);
}

void softcap_scalar(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * (1.0f / cap)) * cap;
}

const RowKernels kScalarKernels = {quant::quantize_row_q8_K,
                                   silu_mul,
                                   attention_head_scalar,
                                   rmsnorm,
                                   dot_f32_x4_scalar,
                                   dot_f32_x4x2_scalar,
                                   softmax_f16,
                                   quant::dequantize_row_q6_K,
                                   softcap_scalar,
                                   gelu_mul,
                                   dot_f32_x4x4_by_pairs<dot_f32_x4x2_scalar>};

}  // namespace

size_t attention_scratch_floats(int64_t head_dim, int64_t max_kv) {
  // SIMD paths: K of the head transposed (head_dim x padded keys) plus 4 score rows, padded keys a
  // multiple of 16, plus 16 floats to align the start to 64 bytes. Covers the scalar path's max_kv.
  const auto padded = static_cast<size_t>((max_kv + 15) / 16 * 16);
  return (static_cast<size_t>(head_dim) + 4) * padded + 16;
}

const RowKernels& row_kernels(Isa isa) {
  switch (vector_isa(isa)) {
    case Isa::kAvx512Vnni:
      return simd::row_kernels_avx512();
    case Isa::kAvx2:
    case Isa::kAvxVnni:
      return simd::row_kernels_avx2();
    case Isa::kScalar:
    case Isa::kAmx:  // vector_isa maps it to kAvx512Vnni
      break;
  }
  return kScalarKernels;
}

}  // namespace dllm::cpu
