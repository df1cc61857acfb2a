// Helpers for the GPU tests: skip without a device, and device copies of host vectors.
// Every GPU test starts with DLLM_REQUIRE_GPU(): without a usable device (CI has none) it is skipped
// with "no CUDA device: <reason>", so the suite passes on CPU-only machines and says why.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device.h"

#define DLLM_REQUIRE_GPU()                                                \
  do {                                                                    \
    const ::dllm::cuda::GpuProbe probe_ = ::dllm::cuda::probe_gpu();      \
    if (!probe_.gpu) GTEST_SKIP() << "no CUDA device: " << probe_.reason; \
    DLLM_CUDA_CHECK(cudaSetDevice(probe_.gpu->device));                   \
  } while (0)

namespace dllm::test {

/// A device array of T, filled from / read back into host vectors.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    DLLM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), std::max<size_t>(1, n) * sizeof(T)));
    DLLM_CUDA_CHECK(cudaMemset(p_, 0, std::max<size_t>(1, n) * sizeof(T)));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    DLLM_CUDA_CHECK(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    DLLM_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> h(n_);
    DLLM_CUDA_CHECK(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace dllm::test
