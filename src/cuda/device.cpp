// Finding a GPU through the CUDA runtime (probe_gpu and friends of device.h).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "cuda/device.h"

namespace dllm::cuda {

GpuProbe probe_gpu() {
  GpuProbe probe;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without any driver the runtime says "driver version is insufficient"; name the real cause.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) {
      probe.reason = "no NVIDIA driver is installed (libcuda.so.1 not found)";
    } else {
      dlclose(driver);
      probe.reason =
          std::string("CUDA reports ") + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
    }
    cudaGetLastError();  // clear the error state for later calls
    return probe;
  }
  if (count == 0) {
    probe.reason = "the CUDA runtime sees no device";
    return probe;
  }
  std::string too_old;
  for (int dev = 0; dev < count; ++dev) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) continue;
    if (prop.major < kMinComputeCapabilityMajor) {
      if (too_old.empty()) {
        too_old = "GPU " + std::to_string(dev) + " (" + prop.name + ") has compute capability " +
                  std::to_string(prop.major) + "." + std::to_string(prop.minor) + ", 8.0 or newer is needed";
      }
      continue;
    }
    GpuInfo info;
    info.device = dev;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.n_sm = prop.multiProcessorCount;
    info.total_bytes = prop.totalGlobalMem;
    if (cudaSetDevice(dev) == cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        info.free_bytes = free_b;
        info.total_bytes = total_b;
      }
    }
    cudaGetLastError();
    probe.gpu = info;
    return probe;
  }
  probe.reason = too_old.empty() ? "no CUDA device answered cudaGetDeviceProperties" : too_old;
  return probe;
}

GpuInfo require_gpu() {
  GpuProbe probe = probe_gpu();
  if (!probe.gpu) throw Error("no GPU found: " + probe.reason + " (run with --device cpu)");
  return *probe.gpu;
}

std::string describe(const GpuInfo& gpu) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "GPU %d: %s, compute capability %d.%d, %d SMs, %.1f GiB free of %.1f GiB",
                gpu.device, gpu.name.c_str(), gpu.cc_major, gpu.cc_minor, gpu.n_sm,
                static_cast<double>(gpu.free_bytes) / (1 << 30),
                static_cast<double>(gpu.total_bytes) / (1 << 30));
  return buf;
}

const char* gpu_gemm_name(GpuGemm gemm) {
  return gemm == GpuGemm::kInt8 ? "int8" : "cublas";
}

GpuGemm parse_gpu_gemm(const std::string& s) {
  if (s == "int8") return GpuGemm::kInt8;
  if (s == "cublas") return GpuGemm::kCublas;
  throw UsageError("--gpu-gemm must be int8 or cublas (got " + s + ")");
}

}  // namespace dllm::cuda
