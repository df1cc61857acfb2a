// Helpers for the GPU tests: skip without a device, and device copies of host vectors.
// Every GPU test starts with DLLM_REQUIRE_GPU(): without a usable device (CI has none) it is skipped
// with "no CUDA device: <reason>", so the suite passes on CPU-only machines and says why.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
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

/// RowStats of one logits row from their definition (cuda/row_stats.h), in f64: argmax over the
/// allowed ids with the lowest id on ties, softmax over the allowed ids, top-2 probabilities counting
/// a tie for the top, sum p log(p + 1e-10).
inline cuda::RowStats reference_row_stats(const float* l, int64_t n, const uint8_t* allowed) {
  cuda::RowStats r;
  double v1 = -INFINITY, v2 = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (allowed && !allowed[i]) continue;
    if (l[i] > v1) {
      v2 = v1;
      v1 = l[i];
      r.token = static_cast<int32_t>(i);
    } else if (l[i] > v2) {
      v2 = l[i];  // includes l[i] == v1: a tie for the top
    }
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!allowed || allowed[i]) sum += std::exp(double(l[i]) - v1);
  double ent = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (allowed && !allowed[i]) continue;
    const double p = std::exp(double(l[i]) - v1) / sum;
    ent += p * std::log(p + 1e-10);
  }
  r.max_logit = static_cast<float>(v1);
  r.prob = 1.0 / sum;
  r.margin = (1.0 - std::exp(v2 - v1)) / sum;
  r.neg_entropy = ent;
  return r;
}

/// Expects `got` to be `want` (token exactly, the f64 quantities to 1e-9 relative).
inline void expect_row_stats(const cuda::RowStats& got, const cuda::RowStats& want,
                             const std::string& where) {
  EXPECT_EQ(got.token, want.token) << where;
  EXPECT_EQ(got.max_logit, want.max_logit) << where;
  EXPECT_NEAR(got.prob, want.prob, 1e-9 * want.prob) << where;
  EXPECT_NEAR(got.margin, want.margin, 1e-9 * std::max(1e-12, std::fabs(want.margin)) + 1e-15) << where;
  EXPECT_NEAR(got.neg_entropy, want.neg_entropy, 1e-9 * std::fabs(want.neg_entropy)) << where;
}

}  // namespace dllm::test
