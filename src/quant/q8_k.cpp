// Q8_K activation quantizer, the same arithmetic as ggml-quants.c quantize_row_q8_K_ref, so that
// our integer dot products see the same int8 activations llama.cpp's CPU backend does.
#include <cmath>

#include "quant/quant.h"

namespace dllm::quant {

namespace {

/// Round to nearest, ties to even (the default rounding mode), as ggml's nearest_int does with its
/// "add 1.5 * 2^23" trick. std::nearbyint is used instead of that trick because with FMA enabled
/// a compiler may fuse `iscale * x + 1.5 * 2^23` into one rounding and round some ties differently.
inline int nearest_int(float v) {
  return static_cast<int>(std::nearbyint(v));
}

}  // namespace

void quantize_row_q8_K(const float* x, block_q8_K* y, int64_t n) {
  const int64_t nb = n / kQK_K;
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    // `max` keeps the sign of the value of largest magnitude (first one on ties), so that value
    // maps to exactly -127 and the other sign can reach +127 (clamped there).
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      for (int j = 0; j < kQK_K; ++j) y[i].qs[j] = 0;
      for (int j = 0; j < kQK_K / 16; ++j) y[i].bsums[j] = 0;
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      const int v = nearest_int(iscale * x[j]);
      y[i].qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < kQK_K / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
      y[i].bsums[j] = static_cast<int16_t>(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace dllm::quant
