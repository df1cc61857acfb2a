// The non-matmul kernels of the forward pass that cost time at canvas lengths in the hundreds
// (measured on LLaDA-8B at 141 tokens, 2 threads, before they existed: attention 12% of the CPU time
// of a forward pass, Q8_K activation quantization 6%, SiLU 3%), one set per instruction-set path.
// kScalar is the portable reference (cpu/ops.h, quant/quant.h); the SIMD sets are chosen with the
// same Isa as the GEMM kernels, so the tests that force each path check these too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/isa.h"
#include "forward/mask.h"
#include "quant/blocks.h"

namespace dllm::cpu {

/// One attention head over every query row of a canvas (or window), each row over its own range of
/// keys: out_t = softmax(scale * q_t . k_j over j in [b_t, e_t)) weighted sum of v_j, for t < n_q,
/// with [b_t, e_t) = ranges[t] (forward/mask.h: a mask rule's keys of the row), or [0, n_kv) for
/// every row when ranges is null (no mask). q_t = q + t * q_stride, out_t = out + t * out_stride,
/// k_j = k + j * kv_stride, v_j = v + j * kv_stride, each head_dim floats; every range lies in
/// [0, n_kv) and is not empty. scratch: attention_scratch_floats(head_dim, n_kv) floats, one region
/// per calling thread. Each output row depends only on its own q row, its range and k/v (never on
/// n_q, on the other rows or on their ranges), so a window's rows equal the same rows of a full pass
/// bit for bit, and a row whose range is [0, n_kv) equals the unmasked row.
struct AttentionHead {
  const float* q = nullptr;
  int64_t q_stride = 0;
  int64_t n_q = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t kv_stride = 0;
  int64_t n_kv = 0;
  const forward::KeyRange* ranges = nullptr;  ///< n_q ranges, or nullptr: every row sees [0, n_kv)
  int64_t head_dim = 0;
  float scale = 1.0f;
  float* out = nullptr;
  int64_t out_stride = 0;
  float* scratch = nullptr;
  /// The scratch already holds this call's keys as the SIMD paths lay them out: the previous call
  /// with this scratch had the same k, kv_stride, n_kv, ranges and head_dim (another query head of
  /// the same GQA group), so its key transpose is reused. Ignored where nothing is kept.
  bool keys_in_scratch = false;
};

/// Floats of scratch one attention_head call needs for up to max_kv keys (any path).
size_t attention_scratch_floats(int64_t head_dim, int64_t max_kv);

/// The kernels of one path. Semantics (the SIMD paths differ from kScalar only by f32 rounding):
/// - quantize_q8_K: exactly quant::quantize_row_q8_K (bit-identical on every path).
/// - silu_mul: out[i] = silu(gate[i]) * up[i] (cpu/ops.h); SIMD paths use a polynomial exp
///   (relative error a few 2^-24).
/// - rmsnorm: as cpu/ops.h rmsnorm (y may alias x; the sum of squares in double, SIMD paths in
///   another order).
/// - attention_head: as AttentionHead says; the scores' softmax sum is accumulated in double on
///   every path (as ggml does), the dot products and the weighted sum of V in f32.
/// - dot_f32_x4: out[j] = dot_f32(a[j], b, n) (cpu/ops.h) for j < 4, bit-identical on every path
///   (the MoE router's logits, which choose the experts).
/// - dot_f32_x4x2: out[j] = dot_f32(a[j], b0, n) and out[4 + j] = dot_f32(a[j], b1, n) for j < 4,
///   bit-identical on every path (two tokens' router logits per pass over four router rows).
/// - dot_f32_x4x4: out[4 t + j] = dot_f32(a[j], b[t], n) for j, t < 4, bit-identical on every path
///   (four tokens per pass: twice the independent add chains of dot_f32_x4x2 on zmm; two
///   dot_f32_x4x2 calls elsewhere).
/// - softmax_f16: as cpu/ops.h softmax_f16 (SIMD paths: the polynomial exp, the sum in lanes).
/// - dequantize_q6_K: exactly quant::dequantize_row_q6_K (bit-identical on every path).
/// - softcap: x[i] = tanh(x[i] * (1 / cap)) * cap, in place (ggml's scale, tanh, scale; SIMD paths
///   within a few 2^-24 of it).
/// - gelu_mul: exactly cpu/ops.h gelu_mul (bit-identical on every path; out may alias gate or up).
struct RowKernels {
  void (*quantize_q8_K)(const float* x, quant::block_q8_K* y, int64_t n);
  void (*silu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*attention_head)(const AttentionHead& a);
  void (*rmsnorm)(const float* x, const float* w, float* y, int64_t n, float eps);
  void (*dot_f32_x4)(const float* const a[4], const float* b, int64_t n, float out[4]);
  void (*dot_f32_x4x2)(const float* const a[4], const float* b0, const float* b1, int64_t n, float out[8]);
  void (*softmax_f16)(const float* x, float scale, float* y, int64_t n);
  void (*dequantize_q6_K)(const quant::block_q6_K* x, float* y, int64_t n);
  void (*softcap)(float* x, int64_t n, float cap);
  void (*gelu_mul)(const float* gate, const float* up, float* out, int64_t n);
  void (*dot_f32_x4x4)(const float* const a[4], const float* const b[4], int64_t n, float out[16]);
};

/// dot_f32_x4x4 as two calls of X4x2 (a dot_f32_x4x2 implementation), for the paths whose x4x2
/// already fills the add pipes.
template <void (*X4x2)(const float* const[4], const float*, const float*, int64_t, float[8])>
void dot_f32_x4x4_by_pairs(const float* const a[4], const float* const b[4], int64_t n, float out[16]) {
  float o[8];
  for (int pair = 0; pair < 2; ++pair) {
    X4x2(a, b[2 * pair], b[2 * pair + 1], n, o);
    for (int j = 0; j < 4; ++j) {
      out[4 * (2 * pair) + j] = o[j];
      out[4 * (2 * pair + 1) + j] = o[4 + j];
    }
  }
}

/// The kernels for `isa` (kAvxVnni uses the AVX2 set: these loops need no VNNI; kAmx the AVX-512 set).
const RowKernels& row_kernels(Isa isa);

namespace simd {
// Per-ISA sets (row_kernels_avx2.cpp, row_kernels_avx512.cpp).
const RowKernels& row_kernels_avx2();
const RowKernels& row_kernels_avx512();
}  // namespace simd

}  // namespace dllm::cpu
