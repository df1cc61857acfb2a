// Scalar reference decoders and dot products for the ggml block formats the runtime reads.
// These are the specification the fast kernels (src/cpu) are tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_types.h"
#include "quant/blocks.h"

namespace dllm::quant {

/// IEEE half -> float (exact), float -> half (round to nearest even), bfloat16 -> float.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);

/// Decodes n values of type `type` from `src` into `dst` (n a multiple of the type's block size).
/// Supports F32, F16, BF16, Q8_0, Q5_0, Q4_K, Q5_K, Q6_K; throws dllm::Error for any other type.
void dequantize_row(gguf::GgmlType type, const void* src, float* dst, int64_t n);

/// True when dequantize_row supports the type.
bool can_dequantize(gguf::GgmlType type);

// Per-format decoders, n a multiple of the block size (written from ggml's block layouts).
void dequantize_row_q8_0(const block_q8_0* x, float* y, int64_t n);
void dequantize_row_q5_0(const block_q5_0* x, float* y, int64_t n);
/// The same values as Q8_0 blocks (same d, qs = q - 16): exact, so a Q8_0 x Q8_0 dot of the result
/// equals ggml's vec_dot_q5_0_q8_0 (int sums per block times d_x * d_y).
void q5_0_to_q8_0(const block_q5_0* x, block_q8_0* y, int64_t n);
void dequantize_row_q4_K(const block_q4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const block_q5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const block_q6_K* x, float* y, int64_t n);

/// Quantizes one activation row of n floats (n a multiple of 256) to Q8_K exactly as ggml's
/// quantize_row_q8_K_ref: per block, amax = largest |x| keeping its sign as `max`,
/// iscale = -127 / max, q = nearest_int(iscale * x) clamped to 127, d = 1 / iscale, bsums per 16.
/// An all-zero block gives d = 0 and q = 0.
void quantize_row_q8_K(const float* x, block_q8_K* y, int64_t n);

/// Quantizes one activation row of n floats (n a multiple of 32) to Q8_0 exactly as ggml-cpu's x86
/// quantize_row_q8_0 (arch/x86/quants.c), the activation format of its Q8_0 weight dot: per block
/// of 32, amax = largest |x|, d = f16(amax / 127), id = 127 / amax (0 when amax is 0),
/// q = round-half-even(x * id). An all-zero block gives d = 0 and q = 0.
void quantize_row_q8_0(const float* x, block_q8_0* y, int64_t n);

/// Reference dot products of one weight row with one Q8_K activation row (n values), computed with
/// integer sums per sub-block as ggml's *_generic vec_dot functions do.
float vec_dot_q4_K_q8_K(const block_q4_K* x, const block_q8_K* y, int64_t n);
float vec_dot_q5_K_q8_K(const block_q5_K* x, const block_q8_K* y, int64_t n);
float vec_dot_q6_K_q8_K(const block_q6_K* x, const block_q8_K* y, int64_t n);
/// One Q8_0 weight row with one Q8_0 activation row (n a multiple of 32): per block the int32 sum
/// of products times d_x * d_y in f32, as ggml's ggml_vec_dot_q8_0_q8_0_generic.
float vec_dot_q8_0_q8_0(const block_q8_0* x, const block_q8_0* y, int64_t n);

}  // namespace dllm::quant
