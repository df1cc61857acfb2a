// See backend.h.
#include "engine/backend.h"

#include <deque>
#include <span>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/forward.h"
#include "cuda/device.h"
#include "gguf/ggml_types.h"
#include "model/model.h"

namespace dllm::engine {

namespace {

/// cpu::CpuForward behind LogitsSource: full passes, Fast-dLLM's cached window steps
/// (CpuForward::forward_window with cache slot 0), batches of up to ForwardOptions::max_batch
/// canvases (CpuForward::forward_batch; CFG sets 2), and packed passes of the engine's requests
/// (CpuForward::forward_packed, up to max_batch x max_tokens activation rows), one KvCache per
/// cache slot (each sized on its first refresh and kept for the slot's next sequence).
class CpuBackend : public Backend {
 public:
  static diffusion::SourceSupport support_for(const cpu::ForwardOptions& fo) {
    return {true, fo.max_batch, fo.max_batch * fo.max_tokens};
  }

  CpuBackend(const model::Model& model, const cpu::ForwardOptions& fo) : forward_(model, fo) {}

  int64_t n_vocab() const override { return forward_.n_vocab(); }
  diffusion::SourceSupport support() const override {
    return {true, forward_.max_batch(), forward_.max_batch() * forward_.max_tokens()};
  }

  /// Throws what CpuForward throws (dllm::Error for a canvas longer than the buffers were sized for).
  void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) override {
    forward_.forward(canvas, rows, out);
  }

  void logits_cached(std::span<const int32_t> canvas, std::span<const int32_t> rows, int64_t window_begin,
                     int64_t window_end, bool refresh, float* out) override {
    forward_.forward_window(canvas, window_begin, window_end, rows, out, cache(0), refresh);
  }

  /// Throws what CpuForward::forward_packed throws (rows beyond max_batch x max_tokens).
  void logits_packed(std::span<const diffusion::PackedRequest> batch) override {
    packed_.clear();
    if (pairs_.size() < batch.size()) pairs_.resize(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      const diffusion::ForwardRequest& r = *batch[i].request;
      cpu::PackedSeq s;
      s.tokens = r.canvas;
      if (!r.uncond.empty()) {  // a CFG pair: the canvas and its prompt-masked copy, back to back
        pairs_[i].assign(r.canvas.begin(), r.canvas.end());
        pairs_[i].insert(pairs_[i].end(), r.uncond.begin(), r.uncond.end());
        s.tokens = pairs_[i];
        s.n_seq = 2;
      }
      s.rows = r.rows;
      s.logits = r.out;
      if (r.kind != diffusion::ForwardKind::kFull) {
        s.cache = &cache(batch[i].cache_slot);
        s.refresh = r.kind == diffusion::ForwardKind::kRefresh;
        s.window_begin = r.window_begin;
        s.window_end = r.window_end;
      }
      packed_.push_back(s);
    }
    forward_.forward_packed(packed_);
  }

  void logits_batch(std::span<const std::span<const int32_t>> canvases, std::span<const int32_t> rows,
                    float* out) override {
    if (canvases.size() < 2 || static_cast<int64_t>(canvases.size()) > forward_.max_batch()) {
      LogitsSource::logits_batch(canvases, rows, out);
      return;
    }
    batch_.clear();
    for (const auto& c : canvases) batch_.insert(batch_.end(), c.begin(), c.end());
    forward_.forward_batch(batch_, static_cast<int64_t>(canvases.size()), rows, out);
  }

  const char* device() const override { return "cpu"; }
  std::string kernels() const override { return isa_name(forward_.isa()); }
  int threads() const override { return forward_.n_threads(); }
  std::string describe() const override {
    return "device: cpu (" + kernels() + ", " + std::to_string(threads()) + " threads)";
  }

 private:
  cpu::KvCache& cache(int64_t slot) {
    if (slot < 0) throw Error("cache slot " + std::to_string(slot) + " is negative");
    if (static_cast<size_t>(slot) >= caches_.size()) caches_.resize(static_cast<size_t>(slot) + 1);
    return caches_[static_cast<size_t>(slot)];
  }

  cpu::CpuForward forward_;
  std::deque<cpu::KvCache> caches_;  ///< per cache slot; a deque keeps each at its address as it grows
  std::vector<int32_t> batch_;       ///< the canvases of a batch, back to back
  std::vector<cpu::PackedSeq> packed_;
  std::vector<std::vector<int32_t>> pairs_;  ///< CFG pairs of a packed pass, back to back
};

/// cuda::GpuForward behind LogitsSource: full passes only (GpuForward has no window or batch entry
/// points yet), so cached steps and batches would take LogitsSource's exact defaults; check_support
/// refuses the first and warns about the second.
class GpuBackend : public Backend {
 public:
  /// No packed pass either: the engine runs its sequences' steps one forward pass each.
  static constexpr diffusion::SourceSupport kSupport{false, 1, 0};

  GpuBackend(const model::Model& model, const cuda::GpuForwardOptions& go)
      : forward_(cuda::make_gpu_forward(model, go)) {}

  int64_t n_vocab() const override { return forward_->n_vocab(); }
  diffusion::SourceSupport support() const override { return kSupport; }

  /// rows.size() x n_vocab unshifted logits into host memory.
  void logits(std::span<const int32_t> canvas, std::span<const int32_t> rows, float* out) override {
    forward_->forward(canvas, rows, out);
  }

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

std::string auto_keeps_on_cpu(const model::Model& model, const BackendOptions& o) {
  if (model.config().is_moe()) return "MoE models run on the CPU only for now";
  if (o.cache != diffusion::CacheMode::kNone)
    return std::string("--cache ") + diffusion::cache_mode_name(o.cache) + " runs on the CPU only";
  std::vector<const gguf::TensorInfo*> mats = {&model.token_embd(), &model.output()};
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

std::vector<std::string> check_support(const diffusion::SourceSupport& support, const std::string& device,
                                       const BackendOptions& o) {
  const std::string the_device = (device == "gpu" ? std::string("the GPU") : std::string("the CPU")) +
                                 (o.device == "auto" ? " (chosen by --device auto)" : "");
  const std::string other = device == "gpu" ? "cpu" : "gpu";
  if (o.cache != diffusion::CacheMode::kNone && !support.cached_steps) {
    throw UsageError(
        std::string("--cache ") + diffusion::cache_mode_name(o.cache) +
        " needs Fast-dLLM's cached window steps, which " + the_device +
        " does not run: every step would be a full forward pass, giving the text of --cache none "
        "and no speed-up. Use --device " +
        other + " for the cache, or --cache none");
  }
  std::vector<std::string> warnings;
  if (o.max_batch > support.max_batch) {
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
    warnings = check_support(GpuBackend::kSupport, "gpu", o);  // before the weights go to the GPU
    cuda::GpuForwardOptions go;
    go.max_tokens = o.max_tokens;
    go.gemm = gemm;
    backend = std::make_unique<GpuBackend>(model, go);
  } else {
    cpu::ForwardOptions fo;
    fo.max_tokens = o.max_tokens;
    fo.n_threads = o.threads;
    fo.isa = choose_isa(o.isa);
    fo.max_batch = o.max_batch;
    warnings = check_support(CpuBackend::support_for(fo), "cpu", o);
    backend = std::make_unique<CpuBackend>(model, fo);
  }
  backend->warnings = std::move(warnings);
  return backend;
}

}  // namespace dllm::engine
