// CUDA status checks at the backend's boundaries: a failing runtime or cuBLAS call becomes a
// dllm::Error naming the call, the file and line, and CUDA's own error name and text. Kernels never
// throw; their launchers check cudaGetLastError() right after the launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "base/error.h"

namespace dllm::cuda {

/// Throws dllm::Error "CUDA error in <what> at <file>:<line>: <name>: <text>" unless `status` is cudaSuccess.
inline void check_cuda(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw Error(std::string("CUDA error in ") + what + " at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

/// The same for cuBLAS status codes.
inline void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(std::string("cuBLAS error in ") + what + " at " + file + ":" + std::to_string(line) +
              ": status " + std::to_string(static_cast<int>(status)));
}

}  // namespace dllm::cuda

// Macros so the message carries the call's text and its file:line.
#define DLLM_CUDA_CHECK(call) ::dllm::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define DLLM_CUBLAS_CHECK(call) ::dllm::cuda::check_cublas((call), #call, __FILE__, __LINE__)
