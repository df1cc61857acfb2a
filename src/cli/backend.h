// Where the forward pass runs (--device cpu | gpu | auto) and the one object `run` and `logits` use,
// whichever device it is: the LogitsSource for the samplers plus a direct forward() for `logits`.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "diffusion/logits_source.h"

namespace dllm::model {
class Model;
}

namespace dllm::cli {

struct BackendOptions {
  std::string device = "cpu";  ///< --device: cpu, gpu, or auto (a GPU of compute capability >= 8.0, else cpu)
  std::string gpu_gemm = "int8";  ///< --gpu-gemm: int8 or cublas
  int threads = 0;                ///< --threads (CPU): 0 = physical cores
  std::string isa;                ///< --isa (CPU): "" = $DLLM_CPU_ISA if set, else the best supported
  int64_t max_tokens = 0;         ///< longest canvas (prompt + max tokens)
  int max_batch = 1;              ///< canvases per forward (2 for classifier-free guidance; CPU only)
};

/// A prepared forward pass on one device. Keeps a reference to the model, which must outlive it.
class Backend {
 public:
  virtual ~Backend() = default;
  /// The samplers' view.
  virtual diffusion::LogitsSource& source() = 0;
  /// Unshifted logits of tokens[rows[j]] into out (rows.size() x n_vocab), as cpu::CpuForward::forward.
  virtual void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* out) = 0;
  virtual int64_t n_vocab() const = 0;
  /// "cpu" or "gpu".
  virtual const char* device() const = 0;
  /// Kernel path: the CPU ISA ("avx512vnni") or the GPU GEMM ("int8").
  virtual std::string kernels() const = 0;
  /// CPU threads (the GPU backend reports 1).
  virtual int threads() const = 0;
  /// One line for stderr: "device: cpu (avx512vnni, 2 threads)" or "device: gpu (GPU 0: NVIDIA ...)".
  virtual std::string describe() const = 0;
};

/// Builds the backend --device asks for. Throws dllm::UsageError for an unknown --device/--gpu-gemm,
/// dllm::Error "no GPU found: <reason> (run with --device cpu)" for --device gpu without a usable GPU
/// (also in builds without CUDA), and what CpuForward / GpuForward throw (weight types without a
/// kernel, too little GPU memory). `auto` falls back to the CPU when no GPU is found; `why_cpu` (when
/// not null) receives the reason.
std::unique_ptr<Backend> make_backend(const model::Model& model, const BackendOptions& options,
                                      std::string* why_cpu = nullptr);

}  // namespace dllm::cli
