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
  /// Notes for the user (no "note: " prefix): why --device auto stayed on the CPU although a GPU is
  /// there. The caller prints them.
  std::vector<std::string> notes;
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

/// What the GPU does not do for `model` run with `options` (the one check behind --device auto and
/// --device gpu): `lacks` (no kernel for a block, shape or weight type, cuda/support.h; or a request it
/// does not run natively: --cache prefix|dual) and `unverified` (it runs, but F32 / F16 / BF16 weight
/// matrices were 2-6e-4 from the f64 reference on an H200, docs/gpu.md). Each names the block, tensor or
/// flag; both empty: the GPU runs it as checked.
struct GpuSupport {
  std::string lacks;
  std::string unverified;
  /// Why --device auto stays on the CPU: lacks, else unverified ("" when the GPU may take it).
  const std::string& reason() const { return lacks.empty() ? unverified : lacks; }
};
GpuSupport unsupported(const model::Model& model, const BackendOptions& options);

/// Builds the backend --device asks for. Throws dllm::UsageError for an unknown --device/--gpu-gemm
/// and what check_support throws (before any GPU work), dllm::Error "<arch>: <what the GPU lacks> (run
/// with --device cpu)" for --device gpu on a model the GPU cannot run (unsupported().lacks; a model it
/// runs unverified runs), dllm::Error "no GPU found: <reason> (run with --device cpu)" for --device gpu
/// without a usable GPU (also in builds without CUDA), and what CpuForward / GpuForward throw (too
/// little GPU memory). `auto` takes the GPU when one is found and unsupported() says nothing; else the
/// CPU, with a note naming the reason when a GPU was found. `why_cpu` (when not null) receives the
/// reason auto chose the CPU.
std::unique_ptr<Backend> make_backend(const model::Model& model, const BackendOptions& options,
                                      std::string* why_cpu = nullptr);

}  // namespace dllm::engine
