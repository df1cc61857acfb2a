// Internal: the 6-bit sub-block scales and mins of Q4_K / Q5_K (not part of the public API).
#pragma once

#include <cstdint>

namespace dllm::quant::detail {

/// Scale and min of sub-block j (0..7) from the 12 packed bytes `q` of a Q4_K/Q5_K super-block.
/// Layout (ggml-common.h / ggml-quants.c get_scale_min_k4): for j < 4 the low 6 bits of q[j] are the
/// scale and of q[j + 4] the min; for j >= 4 the low 4 bits come from q[j + 4] (low nibble: scale,
/// high nibble: min) and the top 2 bits from the top 2 bits of q[j - 4] (scale) and q[j] (min).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace dllm::quant::detail
