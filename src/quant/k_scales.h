// The 6-bit sub-block scales and mins of Q4_K / Q5_K: the one decoder of those 12 packed bytes, for
// host code (src/quant's reference decoders, src/cpu's repacking) and CUDA code (src/cuda's kernels,
// where it compiles as __host__ __device__). Plain C++ without nvcc; no CUDA headers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DLLM_K_SCALES_FN __host__ __device__ __forceinline__
#else
#define DLLM_K_SCALES_FN inline
#endif

namespace dllm::quant {

/// Scale `sc` and min `m` (each 0..63) of sub-block j (0..7) from the 12 packed bytes `s` of a
/// Q4_K / Q5_K super-block (block_q4_K::scales). Layout (ggml-common.h; ggml-quants.c
/// get_scale_min_k4): for j < 4 the low 6 bits of s[j] are the scale and of s[j + 4] the min; for
/// j >= 4 the low 4 bits come from s[j + 4] (low nibble: scale, high nibble: min) and the top 2 bits
/// from the top 2 bits of s[j - 4] (scale) and s[j] (min).
DLLM_K_SCALES_FN void q4k_scale_min(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

}  // namespace dllm::quant

#undef DLLM_K_SCALES_FN
