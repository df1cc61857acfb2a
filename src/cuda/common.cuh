// Device helpers shared by the kernels of src/cuda: warp reductions, f16 loads, and launch checking
// (the Q4_K scale decoding is quant/k_scales.h, shared with the host).
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

/// Throws (host side) when the last launch failed.
inline void check_launch(const char* kernel, const char* file, int line) {
  check_cuda(cudaGetLastError(), kernel, file, line);
}

}  // namespace dllm::cuda::kern

#define DLLM_CHECK_LAUNCH(name) ::dllm::cuda::kern::check_launch(name, __FILE__, __LINE__)
