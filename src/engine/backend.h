// Where the forward pass runs (--device cpu | gpu | auto): one object per device that is the forward
// pass of `run`, `logits` and `serve` (forward::Forward), plus what the CLI reports about it. It states
// what it runs natively (capabilities()); make_backend refuses or warns, naming the flag, when the run
// asks for more.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "diffusion/sampler.h"
#include "forward/pass.h"

namespace dllm::model {
class Model;
}

namespace dllm::engine {

struct BackendOptions {
  std::string device = "cpu";  ///< --device: cpu, gpu, or auto (a GPU of compute capability >= 8.0, else cpu)
  std::string gpu_gemm = "int8";  ///< --gpu-gemm: int8 or cublas
  int threads = 0;                ///< --threads (CPU): 0 = physical cores
  std::string isa;                ///< --isa (CPU): "" = $DLLM_CPU_ISA if set, else the best supported
  int64_t max_tokens = 0;         ///< longest canvas (prompt + max tokens)
  int max_batch = 1;              ///< canvases per forward: 2 for classifier-free guidance (--cfg-scale)
  diffusion::CacheMode cache = diffusion::CacheMode::kNone;  ///< --cache (prefix, dual: cached window steps)
};

/// A prepared forward pass on one device. Keeps a reference to the model, which must outlive it.
class Backend : public forward::Forward {
 public:
  /// "cpu" or "gpu".
  virtual const char* device() const = 0;
  /// Kernel path: the CPU ISA ("avx512vnni") or the GPU GEMM ("int8").
  virtual std::string kernels() const = 0;
  /// CPU threads (the GPU backend reports 1).
  virtual int threads() const = 0;
  /// One line for stderr: "device: cpu (avx512vnni, 2 threads)" or "device: gpu (GPU 0: NVIDIA ...)".
  virtual std::string describe() const = 0;

  /// What check_support said about this device and the options it was built for, one message each
  /// (no "warning: " prefix): the caller prints them.
  std::vector<std::string> warnings;
};

/// Checks what a run asks for beyond plain forward passes against what `device` ("cpu", "gpu") runs
/// natively, before the device is set up:
/// - `--cache prefix|dual` without K/V states: dllm::UsageError naming the flag and the ways out. A
///   full pass per step instead would give the text of --cache none (not what the same flags give on
///   the CPU, Fast-dLLM's approximation) and no step would be faster: a flag that silently changes
///   meaning is refused, as llama.cpp refuses an unsupported combination.
/// - a batch (`--cfg-scale`'s two canvases) above caps.max_segments: a warning, returned. Each canvas
///   then gets its own pass: the same logits, so the same text, only slower.
/// Returns the warnings (empty when the device runs everything natively).
std::vector<std::string> check_support(const forward::Capabilities& caps, const std::string& device,
                                       const BackendOptions& options);

/// Why `--device auto` keeps `model` run with `options` on the CPU even where a GPU is found, or "" when
/// the GPU may take it: a MoE or Q/K-norm model (no GPU kernels), --cache prefix|dual (no cached steps
/// on the GPU), or a weight matrix that is not Q4_K / Q6_K (Q8_0 / Q5_K have no GPU kernel; F32 / F16 /
/// BF16 ran 5e-4 from the f64 reference on an H200, docs/gpu.md). The reason names the tensor or flag.
std::string auto_keeps_on_cpu(const model::Model& model, const BackendOptions& options);

/// Builds the backend --device asks for. Throws dllm::UsageError for an unknown --device/--gpu-gemm
/// and what check_support throws (before any GPU work), dllm::Error "no GPU found: <reason> (run with
/// --device cpu)" for --device gpu without a usable GPU (also in builds without CUDA), and what
/// CpuForward / GpuForward throw (weight types without a kernel, too little GPU memory), and
/// dllm::Error "<arch>: MoE models run on the CPU only for now (run with --device cpu)" for --device
/// gpu on a llada-moe / rnd1 model. `auto` falls back to the CPU when no GPU is found and where
/// auto_keeps_on_cpu says so; `why_cpu` (when not null) receives the reason.
std::unique_ptr<Backend> make_backend(const model::Model& model, const BackendOptions& options,
                                      std::string* why_cpu = nullptr);

}  // namespace dllm::engine
