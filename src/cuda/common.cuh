// Device helpers shared by the kernels of src/cuda: warp reductions, decoding of the K-quant block
// headers, and launch checking.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.h"

namespace dllm::cuda::kern {

constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

/// Little-endian f16 at an address with 2-byte alignment.
__device__ __forceinline__ float load_f16(const uint8_t* p) {
  return __half2float(*reinterpret_cast<const __half*>(p));
}

/// Q4_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes (ggml get_scale_min_k4;
/// same as quant/k_scales.h).
__device__ __forceinline__ void q4k_scale_min(int j, const uint8_t* s, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/// Throws (host side) when the last launch failed.
inline void check_launch(const char* kernel, const char* file, int line) {
  check_cuda(cudaGetLastError(), kernel, file, line);
}

}  // namespace dllm::cuda::kern

#define DLLM_CHECK_LAUNCH(name) ::dllm::cuda::kern::check_launch(name, __FILE__, __LINE__)
