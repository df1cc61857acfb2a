// See backend.h.
#include "cli/backend.h"

#include "base/error.h"
#include "cli/cpu_logits_source.h"
#include "cli/gpu_logits_source.h"
#include "cpu/dispatch.h"
#include "cpu/forward.h"
#include "cuda/device.h"

namespace dllm::cli {

namespace {

class CpuBackend : public Backend {
 public:
  CpuBackend(const model::Model& model, const cpu::ForwardOptions& fo)
      : forward_(model, fo), source_(forward_) {}
  diffusion::LogitsSource& source() override { return source_; }
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* out) override {
    forward_.forward(tokens, rows, out);
  }
  int64_t n_vocab() const override { return forward_.n_vocab(); }
  const char* device() const override { return "cpu"; }
  std::string kernels() const override { return cpu::isa_name(forward_.isa()); }
  int threads() const override { return forward_.n_threads(); }
  std::string describe() const override {
    return "device: cpu (" + kernels() + ", " + std::to_string(threads()) + " threads)";
  }

 private:
  cpu::CpuForward forward_;
  CpuLogitsSource source_;
};

class GpuBackend : public Backend {
 public:
  GpuBackend(const model::Model& model, const cuda::GpuForwardOptions& go)
      : forward_(cuda::make_gpu_forward(model, go)), source_(*forward_) {}
  diffusion::LogitsSource& source() override { return source_; }
  void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* out) override {
    forward_->forward(tokens, rows, out);
  }
  int64_t n_vocab() const override { return forward_->n_vocab(); }
  const char* device() const override { return "gpu"; }
  std::string kernels() const override { return cuda::gpu_gemm_name(forward_->gemm()); }
  int threads() const override { return 1; }
  std::string describe() const override {
    return "device: gpu (" + cuda::describe(forward_->gpu()) + ", " + kernels() + " GEMM)";
  }

 private:
  std::unique_ptr<cuda::GpuForward> forward_;
  GpuLogitsSource source_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const model::Model& model, const BackendOptions& o,
                                      std::string* why_cpu) {
  if (o.device != "cpu" && o.device != "gpu" && o.device != "auto") {
    throw UsageError("--device must be cpu, gpu or auto (got " + o.device + ")");
  }
  const cuda::GpuGemm gemm = cuda::parse_gpu_gemm(o.gpu_gemm);  // usage error before any work
  bool use_gpu = o.device == "gpu";
  if (o.device == "auto") {
    const cuda::GpuProbe probe = cuda::probe_gpu();
    use_gpu = probe.gpu.has_value();
    if (!use_gpu && why_cpu) *why_cpu = probe.reason;
  }
  if (use_gpu) {
    // CFG's two canvases go through LogitsSource::logits_batch's default (one forward each) here.
    cuda::GpuForwardOptions go;
    go.max_tokens = o.max_tokens;
    go.gemm = gemm;
    return std::make_unique<GpuBackend>(model, go);
  }
  cpu::ForwardOptions fo;
  fo.max_tokens = o.max_tokens;
  fo.n_threads = o.threads;
  fo.isa = cpu::choose_isa(o.isa);
  fo.max_batch = o.max_batch;
  return std::make_unique<CpuBackend>(model, fo);
}

}  // namespace dllm::cli
