// See backend.h.
#include "engine/backend.h"

#include <span>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/forward.h"
#include "cuda/device.h"
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

/// cuda::GpuForward: one segment per pass, each a whole sequence (no K/V state) under the full mask;
/// check_support refuses a cache and warns about a CFG batch.
class GpuBackend : public Backend {
 public:
  static forward::Capabilities capabilities_for(const cuda::GpuForwardOptions& go) {
    forward::Capabilities caps;
    caps.max_rows = go.max_tokens;
    caps.max_segments = 1;
    return caps;
  }

  GpuBackend(const model::Model& model, const cuda::GpuForwardOptions& go)
      : forward_(cuda::make_gpu_forward(model, go)), caps_(capabilities_for(go)) {}

  int64_t n_vocab() const override { return forward_->n_vocab(); }
  forward::Capabilities capabilities() const override { return caps_; }

  /// Each segment in its own pass: rows.size() x n_vocab unshifted logits into host memory.
  void forward(std::span<const forward::Segment> segments) override {
    if (segments.empty()) throw Error("forward: no segments");
    for (size_t i = 0; i < segments.size(); ++i) {
      const forward::Segment& s = segments[i];
      if (s.kv != nullptr)
        throw Error("forward: segment " + std::to_string(i) +
                    " has a K/V state, which the GPU does not keep");
      if (s.mask.kind != forward::MaskRule::Kind::kFull)
        throw Error("forward: segment " + std::to_string(i) + " has the mask rule " +
                    forward::describe(s.mask) + ", which the GPU does not run");
    }
    for (const forward::Segment& s : segments) forward_->forward(s.tokens, s.logit_rows, s.logits);
  }

  const char* device() const override { return "gpu"; }
  std::string kernels() const override { return cuda::gpu_gemm_name(forward_->gemm()); }
  int threads() const override { return 1; }
  std::string describe() const override {
    return "device: gpu (" + cuda::describe(forward_->gpu()) + ", " + kernels() + " GEMM)";
  }

 private:
  std::unique_ptr<cuda::GpuForward> forward_;
  forward::Capabilities caps_;
};

}  // namespace

std::string auto_keeps_on_cpu(const model::Model& model, const BackendOptions& o) {
  if (model.config().is_moe()) return "MoE models run on the CPU only for now";
  if (o.cache != diffusion::CacheMode::kNone)
    return std::string("--cache ") + diffusion::cache_mode_name(o.cache) + " runs on the CPU only";
  std::vector<const gguf::TensorInfo*> mats = {&model.token_embd(), &model.output()};
  if (model.config().n_rot != model.config().head_dim) return "partial RoPE runs on the CPU only for now";
  for (const model::LayerWeights& lw : model.layers()) {
    if (!lw.attn_q_norm.empty()) return "Q/K-norm layers run on the CPU only for now";
    for (const gguf::TensorInfo* t :
         {lw.attn_q, lw.attn_k, lw.attn_v, lw.attn_output, lw.ffn_gate, lw.ffn_up, lw.ffn_down})
      mats.push_back(t);
  }
  for (const gguf::TensorInfo* t : mats) {
    if (t && t->type != gguf::GgmlType::Q4_K && t->type != gguf::GgmlType::Q6_K)
      return t->name + " is " + gguf::type_name(t->type) +
             ": the GPU is checked for Q4_K / Q6_K weights only";
  }
  return "";
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
  if (use_gpu && model.config().is_moe()) {
    // cuda::GpuForward refuses these too; saying it here spares a GPU probe and the upload.
    throw Error(model.config().arch_name +
                ": MoE models run on the CPU only for now (run with --device cpu)");
  }
  const std::string keep = o.device == "auto" ? auto_keeps_on_cpu(model, o) : "";
  if (!keep.empty()) {
    if (why_cpu) *why_cpu = keep;
  } else if (o.device == "auto") {
    const cuda::GpuProbe probe = cuda::probe_gpu();
    use_gpu = probe.gpu.has_value();
    if (!use_gpu && why_cpu) *why_cpu = probe.reason;
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
  return backend;
}

}  // namespace dllm::engine
