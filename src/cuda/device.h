// The NVIDIA GPU backend as the rest of the program sees it: finding a GPU and the GPU forward pass.
// Host-only C++: usable from code built without CUDA. Builds with DLLM_CUDA link dllm_cuda, which
// defines DLLM_WITH_CUDA=1 for its users; without it this header supplies stand-ins that report "this
// build has no CUDA backend", so callers need no #ifdef of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "base/error.h"
#include "cuda/row_stats.h"
#include "forward/pass.h"
#include "model/config.h"

namespace dllm::model {
class Model;
}  // namespace dllm::model

namespace dllm::cuda {

/// One NVIDIA GPU as the CUDA runtime reports it.
struct GpuInfo {
  int device = 0;    ///< CUDA device ordinal
  std::string name;  ///< e.g. "NVIDIA H200"
  int cc_major = 0;  ///< compute capability, e.g. 9 and 0 for Hopper
  int cc_minor = 0;
  size_t free_bytes = 0;  ///< cudaMemGetInfo at probe time
  size_t total_bytes = 0;
  int n_sm = 0;  ///< multiprocessors
};

/// The result of looking for a usable GPU: `gpu` set, or `reason` saying why there is none
/// (no driver, no device, compute capability below 8.0, built without CUDA).
struct GpuProbe {
  std::optional<GpuInfo> gpu;
  std::string reason;
};

/// Compute capability the kernels need (mma.sync int8 m16n8k32 and the f16/bf16 paths: Ampere).
constexpr int kMinComputeCapabilityMajor = 8;

/// The first CUDA device of compute capability 8.0 or newer (CUDA's device order). Never throws.
GpuProbe probe_gpu();

/// probe_gpu().gpu, or throws dllm::Error "no GPU found: <reason> (run with --device cpu)": what
/// `--device gpu` does.
GpuInfo require_gpu();

/// One line for stderr: "GPU 0: NVIDIA H200, compute capability 9.0, 132 SMs, 139.1 GiB free of 139.8 GiB".
std::string describe(const GpuInfo& gpu);

/// Which matrix path the GPU forward pass uses for Q4_K / Q6_K weights.
enum class GpuGemm {
  kInt8,    ///< activations quantized to int8 per 32 values, weights read quantized, mma.sync s8 tensor cores
  kCublas,  ///< reference: each weight dequantized to an f16 scratch, cublasGemmEx f16 x f16 -> f32
};

/// "int8" / "cublas"; parse_gpu_gemm is its inverse and throws dllm::UsageError
/// "--gpu-gemm must be int8 or cublas (got <s>)" otherwise.
const char* gpu_gemm_name(GpuGemm gemm);
GpuGemm parse_gpu_gemm(const std::string& s);

struct GpuForwardOptions {
  int64_t max_tokens = 0;         ///< longest token sequence forward() will see (prompt + canvas)
  GpuGemm gemm = GpuGemm::kInt8;  ///< matrix path (--gpu-gemm)
  int device = -1;                ///< CUDA device ordinal; -1: probe_gpu()'s choice
  /// Diagnostics only: forces a RoPE pairing instead of the architecture's (as cpu::ForwardOptions).
  std::optional<model::RopeMode> rope_mode;
};

/// The transformer forward pass on one GPU: forward::Forward as model::ForwardDriver over the GPU's
/// operations (forward.cpp), the same checks and messages as cpu::CpuForward. Weights are uploaded
/// once in the constructor and stay quantized (Q4_K as stored, Q6_K padded to 224-byte blocks; F32 /
/// F16 / BF16 matrices as stored, read through f16), the mapped file pages are released behind the
/// upload, and every activation buffer is sized for max_tokens there. One segment per pass (more run
/// one after another), a whole sequence (no K/V state), any mask rule.
class GpuForward : public forward::Forward {
 public:
  /// `model` must outlive this object. Throws dllm::Error "<arch>: <what the GPU lacks> (run with
  /// --device cpu)" (cuda/support.h lacks: blocks, shapes, weight types without a GPU kernel) before
  /// looking for a GPU, "no GPU found: ..." when none is usable, "model needs N MiB of GPU memory, GPU 0
  /// (name) has M MiB free" when it has too little; CUDA failures become dllm::Error naming the call,
  /// file and line.
  GpuForward(const model::Model& model, const GpuForwardOptions& options);
  ~GpuForward() override;
  GpuForward(const GpuForward&) = delete;
  GpuForward& operator=(const GpuForward&) = delete;

  /// forward::Forward::forward: the UNSHIFTED logits of each segment's rows into host memory. Throws
  /// dllm::Error before any GPU work for the inputs CpuForward refuses, with the same messages, and for
  /// a segment with a K/V state.
  void forward(std::span<const forward::Segment> segments) override;
  /// Masks; one segment of up to max_tokens rows per pass; no K/V state.
  forward::Capabilities capabilities() const override;

  /// The allowed-id mask forward_stats uses (n_vocab bytes, nonzero = may be chosen; the samplers'
  /// `allowed`); until it is set every id is allowed. Throws dllm::Error for a wrong size.
  void set_allowed(std::span<const uint8_t> allowed);

  /// The pass of tokens (positions 0..n-1, every key) with the statistics of each requested row
  /// computed on the device (RowStats: argmax, softmax probability, margin, entropy over the allowed
  /// ids) instead of the logits: stats[j] for rows[j], a few bytes per row over the bus. The
  /// temperature-0 paths of the samplers need only this.
  void forward_stats(std::span<const int32_t> tokens, std::span<const int32_t> rows, RowStats* stats);

  int64_t n_vocab() const override;
  int64_t max_tokens() const;
  GpuGemm gemm() const;
  const GpuInfo& gpu() const;
  /// Device bytes held by the uploaded weights and by the buffers (for --verbose and the check script).
  size_t weight_bytes() const;
  size_t buffer_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The factory the CLI calls for --device gpu: GpuForward(model, options) behind a unique_ptr.
std::unique_ptr<GpuForward> make_gpu_forward(const model::Model& model, const GpuForwardOptions& options);

#ifndef DLLM_WITH_CUDA
// Stand-ins for builds without the CUDA backend (DLLM_CUDA=OFF): nothing here touches a GPU.
inline constexpr const char* kNoCudaReason = "this dllm was built without the CUDA backend (DLLM_CUDA=OFF)";
inline GpuProbe probe_gpu() {
  return GpuProbe{std::nullopt, kNoCudaReason};
}
inline GpuInfo require_gpu() {
  throw Error(std::string("no GPU found: ") + kNoCudaReason + " (run with --device cpu)");
}
inline std::string describe(const GpuInfo& gpu) {
  return "GPU " + std::to_string(gpu.device) + ": " + gpu.name;
}
inline const char* gpu_gemm_name(GpuGemm gemm) {
  return gemm == GpuGemm::kInt8 ? "int8" : "cublas";
}
inline GpuGemm parse_gpu_gemm(const std::string& s) {
  if (s == "int8") return GpuGemm::kInt8;
  if (s == "cublas") return GpuGemm::kCublas;
  throw UsageError("--gpu-gemm must be int8 or cublas (got " + s + ")");
}
struct GpuForward::Impl {};
inline GpuForward::GpuForward(const model::Model&, const GpuForwardOptions&) {
  require_gpu();
}
inline GpuForward::~GpuForward() = default;
inline void GpuForward::forward(std::span<const forward::Segment>) {}
inline forward::Capabilities GpuForward::capabilities() const {
  return {};
}
inline void GpuForward::set_allowed(std::span<const uint8_t>) {}
inline void GpuForward::forward_stats(std::span<const int32_t>, std::span<const int32_t>, RowStats*) {}
inline int64_t GpuForward::n_vocab() const {
  return 0;
}
inline int64_t GpuForward::max_tokens() const {
  return 0;
}
inline GpuGemm GpuForward::gemm() const {
  return GpuGemm::kInt8;
}
inline const GpuInfo& GpuForward::gpu() const {
  static const GpuInfo none;
  return none;
}
inline size_t GpuForward::weight_bytes() const {
  return 0;
}
inline size_t GpuForward::buffer_bytes() const {
  return 0;
}
inline std::unique_ptr<GpuForward> make_gpu_forward(const model::Model& model,
                                                    const GpuForwardOptions& options) {
  return std::make_unique<GpuForward>(model, options);
}
#endif

}  // namespace dllm::cuda
