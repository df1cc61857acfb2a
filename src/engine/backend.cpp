// See backend.h.
#include "engine/backend.h"

#include <span>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/forward.h"
#include "cuda/device.h"
#include "cuda/support.h"
#include "gguf/ggml_types.h"
#include "model/model.h"

namespace dllm::engine {

namespace {

/// cpu::CpuForward: K/V states, masks, every segment of a pass together up to max_batch x
/// max_tokens rows.
class CpuBackend : public Backend {
 public:
  static forward::Capabilities capabilities_for(const cpu::ForwardOptions& fo) {
    forward::Capabilities caps;
    caps.kv_state = caps.masks = true;
    caps.max_rows = caps.max_segments = fo.max_batch * fo.max_tokens;
    return caps;
  }

  CpuBackend(const model::Model& model, const cpu::ForwardOptions& fo) : forward_(model, fo) {}

  int64_t n_vocab() const override { return forward_.n_vocab(); }
  forward::Capabilities capabilities() const override { return forward_.capabilities(); }
  /// Throws what CpuForward throws (dllm::Error for a segment beyond what the buffers may hold).
  void forward(std::span<const forward::Segment> segments) override { forward_.forward(segments); }

  const char* device() const override { return "cpu"; }
  std::string kernels() const override { return isa_name(forward_.isa()); }
  int threads() const override { return forward_.n_threads(); }
  std::string describe() const override {
    return "device: cpu (" + kernels() + ", " + std::to_string(threads()) + " threads)";
  }

 private:
  cpu::CpuForward forward_;
};

/// cuda::GpuForward: one segment per pass (the engine runs one sequence per pass, a CFG pair two),
/// whole sequences without a K/V state; check_support refuses a cache and warns about a CFG batch.
class GpuBackend : public Backend {
 public:
  static forward::Capabilities capabilities_for(const cuda::GpuForwardOptions& go) {
    forward::Capabilities caps;
    caps.masks = true;
    caps.max_rows = go.max_tokens;
    caps.max_segments = 1;
    return caps;
  }

  GpuBackend(const model::Model& model, const cuda::GpuForwardOptions& go)
      : forward_(cuda::make_gpu_forward(model, go)) {}

  int64_t n_vocab() const override { return forward_->n_vocab(); }
  forward::Capabilities capabilities() const override { return forward_->capabilities(); }
  /// Throws what GpuForward throws.
  void forward(std::span<const forward::Segment> segments) override { forward_->forward(segments); }

  const char* device() const override { return "gpu"; }
  std::string kernels() const override { return cuda::gpu_gemm_name(forward_->gemm()); }
  int threads() const override { return 1; }
  std::string describe() const override {
    return "device: gpu (" + cuda::describe(forward_->gpu()) + ", " + kernels() + " GEMM)";
  }

 private:
  std::unique_ptr<cuda::GpuForward> forward_;
};

}  // namespace

GpuSupport unsupported(const model::Model& model, const BackendOptions& o) {
  GpuSupport s;
  s.lacks = cuda::lacks_blocks(model.config());
  if (s.lacks.empty() && o.cache != diffusion::CacheMode::kNone)
    s.lacks = std::string("--cache ") + diffusion::cache_mode_name(o.cache) + " runs on the CPU only";
  // Any matrix not Q4_K / Q6_K: one sentence; a hard limit when some matrix has no GPU kernel at all.
  const std::string weights = cuda::unverified(model);
  if (!weights.empty()) {
    if (s.lacks.empty() && !cuda::lacks_matrix_kernel(model).empty())
      s.lacks = weights;
    else
      s.unverified = weights;
  }
  return s;
}

std::vector<std::string> check_support(const forward::Capabilities& caps, const std::string& device,
                                       const BackendOptions& o) {
  const std::string the_device = (device == "gpu" ? std::string("the GPU") : std::string("the CPU")) +
                                 (o.device == "auto" ? " (chosen by --device auto)" : "");
  const std::string other = device == "gpu" ? "cpu" : "gpu";
  if (o.cache != diffusion::CacheMode::kNone && !caps.kv_state) {
    throw UsageError(
        std::string("--cache ") + diffusion::cache_mode_name(o.cache) +
        " needs Fast-dLLM's cached window steps, which " + the_device +
        " does not run: every step would be a full forward pass, giving the text of --cache none "
        "and no speed-up. Use --device " +
        other + " for the cache, or --cache none");
  }
  std::vector<std::string> warnings;
  if (o.max_batch > caps.max_segments) {
    warnings.push_back(
        "--cfg-scale: " + the_device + " runs the canvas and its prompt-masked copy one after the other (" +
        std::to_string(o.max_batch) + " forward passes per step, not one batch): the same text, slower");
  }
  return warnings;
}

std::unique_ptr<Backend> make_backend(const model::Model& model, const BackendOptions& o,
                                      std::string* why_cpu) {
  if (o.device != "cpu" && o.device != "gpu" && o.device != "auto") {
    throw UsageError("--device must be cpu, gpu or auto (got " + o.device + ")");
  }
  const cuda::GpuGemm gemm = cuda::parse_gpu_gemm(o.gpu_gemm);  // usage error before any work
  bool use_gpu = o.device == "gpu";
  std::string note;
  if (use_gpu) {
    const GpuSupport gpu = unsupported(model, o);
    // A request the GPU does not run natively is the usage error check_support words (below); the
    // model's blocks and weights are refused here, before a GPU probe and the upload.
    if (!gpu.lacks.empty() && o.cache == diffusion::CacheMode::kNone)
      throw Error(model.config().arch_name + ": " + gpu.lacks + " (run with --device cpu)");
  } else if (o.device == "auto") {
    const cuda::GpuProbe probe = cuda::probe_gpu();
    const std::string keep = unsupported(model, o).reason();
    use_gpu = probe.gpu.has_value() && keep.empty();
    if (!use_gpu && why_cpu) *why_cpu = keep.empty() ? probe.reason : keep;
    if (probe.gpu && !keep.empty()) note = "--device auto runs on the CPU although a GPU is there: " + keep;
  }
  std::unique_ptr<Backend> backend;
  std::vector<std::string> warnings;
  if (use_gpu) {
    cuda::GpuForwardOptions go;
    go.max_tokens = o.max_tokens;
    go.gemm = gemm;
    warnings = check_support(GpuBackend::capabilities_for(go), "gpu", o);  // before the weights go to the GPU
    backend = std::make_unique<GpuBackend>(model, go);
  } else {
    cpu::ForwardOptions fo;
    fo.max_tokens = o.max_tokens;
    fo.n_threads = o.threads;
    fo.isa = choose_isa(o.isa);
    fo.max_batch = o.max_batch;
    warnings = check_support(CpuBackend::capabilities_for(fo), "cpu", o);
    backend = std::make_unique<CpuBackend>(model, fo);
  }
  backend->warnings = std::move(warnings);
  if (!note.empty()) backend->notes.push_back(note);
  return backend;
}

}  // namespace dllm::engine
