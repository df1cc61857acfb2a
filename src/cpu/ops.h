// The non-matmul operations of the forward pass, one token row or one attention row at a time.
// Scalar f32 with f64 where ggml accumulates in double (RMSNorm sum of squares, softmax sum). Every
// function is pure over its arguments: the forward pass threads over rows/heads and each output
// element is computed by exactly one call, so results do not depend on the thread count.
#pragma once

#include <cstdint>

#include "model/config.h"

namespace dllm::cpu {

/// RMSNorm of one row (ggml_rms_norm then ggml_mul): y[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * w[i],
/// the mean accumulated in double. x, w, y have n values; y may alias x.
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);

/// Rotates the first n_rot values of each of n_heads consecutive heads of head_dim values (one
/// token's Q or K row) in place with the angles of one position (cos/sin: n_rot/2 values, e.g.
/// model::RopeTable::cos(pos)); the values from n_rot on stay as they are (partial RoPE, llama.cpp's
/// n_rot < head_dim). Pair i of a head is (2i, 2i+1) for RopeMode::kNorm (ggml "normal", LLaDA) and
/// (i, i + n_rot/2) for kNeox (Dream); both rotate (a, b) -> (a cos - b sin, a sin + b cos) with
/// angle index i. n_rot 0: head_dim.
void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          model::RopeMode mode, int64_t n_rot = 0);

/// One row of bidirectional attention: out = softmax(scale * q . k_j over j < n_kv) weighted sum of v_j.
/// q, out: head_dim values; k_j = k + j * k_stride, v_j = v + j * v_stride (head_dim values each);
/// scores: scratch of n_kv floats. Softmax as ggml: max-subtracted exp, sum in double.
void attention_row(const float* q, const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                   int64_t n_kv, int64_t head_dim, float scale, float* scores, float* out);

/// Bidirectional multi-head attention over n tokens (no mask), GQA: query head h reads kv head
/// h / (n_head / n_head_kv) (llama.cpp's grouping, consecutive query heads share a kv head).
/// q, out: n x (n_head * head_dim) row-major; k, v: n x (n_head_kv * head_dim). scale is usually
/// 1/sqrt(head_dim). scratch: n_threads rows of scratch_stride >= n floats. Threads over (head, token)
/// with OpenMP; each output row is computed by one attention_row call, so the result does not depend
/// on n_threads.
void attention(const float* q, const float* k, const float* v, int64_t n, int64_t n_head, int64_t n_head_kv,
               int64_t head_dim, float scale, float* out, float* scratch, int64_t scratch_stride,
               int n_threads);

/// Attention of n_q query rows over n_kv key/value rows (no mask), GQA as attention(): the query rows
/// are any subset of positions (e.g. a cached step's window) and k/v hold every position's K and V.
/// q, out: n_q x (n_head * head_dim) row-major; k, v: n_kv x (n_head_kv * head_dim). scratch:
/// n_threads rows of scratch_stride >= n_kv floats. Query row t is computed by one attention_row call
/// exactly as attention() computes it, so the same q row and k/v give the same output bits.
void attention_queries(const float* q, int64_t n_q, const float* k, const float* v, int64_t n_kv,
                       int64_t n_head, int64_t n_head_kv, int64_t head_dim, float scale, float* out,
                       float* scratch, int64_t scratch_stride, int n_threads);

/// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

/// GELU (tanh form) as ggml-cpu computes it (ggml/src/ggml-cpu/vec.h ggml_vec_gelu_f32 with
/// GGML_GELU_FP16): 0 for x <= -10, x for x >= 10, else the f32 GELU of x rounded to f16, rounded to f16.
float gelu_f16(float x);
/// The table gelu_f16 reads between -10 and 10: entry h is the GELU of the binary16 value with bits
/// h, as ggml_table_gelu_f16 (65536 floats, made on first use).
const float* gelu_f16_table();
/// out[i] = gelu_f16(gate[i]) * up[i] (ggml_vec_geglu_f32). out may alias gate or up.
void gelu_mul(const float* gate, const float* up, float* out, int64_t n);

/// Softmax of one row rounded to f16: y[i] = f16(e_i * float(1 / sum)), e_i = exp(x[i] * scale - m),
/// m = max x[i] * scale, the sum of the e_i in double (ggml_soft_max_f32; f16() as ggml-cpu rounds an
/// F16 matmul's f32 operand, quant::fp32_to_fp16). y may alias x; n >= 1.
void softmax_f16(const float* x, float scale, float* y, int64_t n);

/// y[i] += x[i].
void add_inplace(float* y, const float* x, int64_t n);

/// Index of the largest value (the first on ties); n >= 1.
int64_t argmax(const float* x, int64_t n);

/// f32 dot product with 8 independent accumulators summed in a fixed order (deterministic, and
/// vectorizable without -ffast-math).
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace dllm::cpu
