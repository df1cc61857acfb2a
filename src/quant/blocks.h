// ggml block layouts, byte for byte as stored in GGUF files.
// Source: ggml/src/ggml-common.h in llama.cpp (block_q8_0, block_q4_K, block_q5_K, block_q6_K, block_q8_K).
#pragma once

#include <cstdint>

namespace dllm::quant {

constexpr int kQK8_0 = 32;  ///< elements per block_q8_0
constexpr int kQK_K = 256;  ///< elements per K-quant super-block
constexpr int kKScaleSize = 12;

/// Q8_0: x = d * qs[i]. 34 bytes per 32 values.
struct block_q8_0 {
  uint16_t d;  ///< f16 scale
  int8_t qs[kQK8_0];
};
static_assert(sizeof(block_q8_0) == 34);

/// Q5_0: x = d * (q - 16), q 5 bits: value j < 16 is the low nibble of qs[j] plus bit j of qh as its
/// fifth bit, value j + 16 the high nibble of qs[j] plus bit j + 16 of qh (qh little-endian).
/// 22 bytes per 32 values.
struct block_q5_0 {
  uint16_t d;  ///< f16 scale
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};
static_assert(sizeof(block_q5_0) == 22);

/// Q4_K: 8 sub-blocks of 32; x = d * sc[j] * q - dmin * m[j], with 6-bit sc/m packed in `scales`
/// (get_scale_min_k4). Nibbles: byte l of 32-byte chunk c holds sub-block 2c in its low nibble and
/// sub-block 2c+1 in its high nibble. 144 bytes per 256 values.
struct block_q4_K {
  uint16_t d;     ///< f16 super-block scale of the scales
  uint16_t dmin;  ///< f16 super-block scale of the mins
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q4_K) == 144);

/// Q5_K: as Q4_K plus a fifth bit per value in qh. 176 bytes per 256 values.
struct block_q5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(block_q5_K) == 176);

/// Q6_K: 16 sub-blocks of 16; x = d * scales[j] * (q - 32), q 6 bits = 4 low (ql) + 2 high (qh).
/// 210 bytes per 256 values.
struct block_q6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  ///< f16
};
static_assert(sizeof(block_q6_K) == 210);

/// Q8_K (activations): x ~= d * qs[i]; bsums[j] = sum of qs[16j .. 16j+15] (for the zero-point terms).
struct block_q8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(block_q8_K) == 292);

}  // namespace dllm::quant
