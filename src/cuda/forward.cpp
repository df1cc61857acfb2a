// GpuForward: the GPU's operations of model/device_ops.h, run by model::ForwardDriver as the CPU's
// are (cpu/forward.cpp): one segment per pass, a whole sequence without a K/V state, any mask rule.
// What the kernels lack (cuda/support.h) is refused in the constructor. Every operation is one or a
// few kernels (kernels.h) on one stream; the residual add of each projection is fused
// into the next RMSNorm, which also writes the next matrix input as int8 (for the mma path) and f16
// (for the cuBLAS path). The int8 input is rounded as ggml-cpu rounds it to Q8_K (kernels.h), so
// the int8 path computes what the CPU path and llama.cpp's reference logits compute; the cuBLAS
// path feeds Q4_K / Q6_K matrices the same rounded values in f16 (f16_q8), so the two paths check
// each other. Which f16 copy a producer writes follows its first consumer (q for q/k/v, gate for
// gate/up): the two agree in every Q4_K_M file.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/kernels.h"
#include "cuda/support.h"
#include "model/driver.h"
#include "model/forward_plan.h"
#include "model/model.h"
#include "quant/blocks.h"

namespace dllm::cuda {

namespace {

using kern::WType;

/// A cudaMalloc'd buffer freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) DLLM_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// A weight matrix on the device: n_out rows of n_in values, row_bytes bytes per row.
struct DevMatrix {
  WType type = WType::kF32;
  int64_t n_out = 0, n_in = 0, row_bytes = 0;
  DeviceBuffer data;
  bool quantized() const { return type == WType::kQ4_K || type == WType::kQ6_K; }
};

/// Device layout of a GGUF tensor type, or throws for types without a GPU kernel.
WType device_type(const gguf::TensorInfo& t) {
  switch (t.type) {
    case gguf::GgmlType::Q4_K:
      return WType::kQ4_K;
    case gguf::GgmlType::Q6_K:
      return WType::kQ6_K;
    case gguf::GgmlType::F16:
      return WType::kF16;
    case gguf::GgmlType::F32:
      return WType::kF32;
    case gguf::GgmlType::BF16:
      return WType::kBF16;
    default:
      throw Error("tensor " + t.name + " is " + gguf::type_name(t.type) +
                  ": GPU matrix kernels exist for Q4_K, Q6_K, F32, F16, BF16");
  }
}

/// Device bytes of one row of `t` in its device layout (Q6_K padded).
int64_t device_row_bytes(const gguf::TensorInfo& t) {
  if (t.type == gguf::GgmlType::Q6_K) return t.ne[0] / quant::kQK_K * kern::kQ6KPaddedBytes;
  return static_cast<int64_t>(t.row_bytes());
}

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

struct GpuForward::Impl final : model::DeviceOps {
  const model::Model& model;
  const model::ForwardPlan plan;
  const model::ModelConfig& c;  ///< plan.config()
  GpuInfo info;
  GpuGemm gemm;
  int64_t max_tokens_pad = 0;  ///< max_tokens rounded up to kern::kTokenTile (int8 activation rows)
  /// Owns the stream and the cuBLAS handle, declared before every buffer so that it is destroyed
  /// after them, and destroyed also when the constructor throws part-way (~Impl would not run).
  struct Handles {
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    ~Handles() {
      if (cublas) cublasDestroy(cublas);
      if (stream) cudaStreamDestroy(stream);
    }
  } handles;
  cudaStream_t stream = nullptr;    ///< handles.stream
  cublasHandle_t cublas = nullptr;  ///< handles.cublas
  size_t weight_bytes = 0, buffer_bytes = 0;

  struct Layer {
    DevMatrix q, k, v, o, gate, up, down;
    DeviceBuffer attn_norm, ffn_norm, bq, bk, bv;
  };
  std::vector<Layer> layers;
  DevMatrix embd, output;
  DeviceBuffer output_norm, rope_cos, rope_sin;

  // Activations, all sized for max_tokens rows.
  DeviceBuffer x, proj, q, k, v, att, gate, up;  // f32
  DeviceBuffer act_q, act_ds, act_f16;           // the current matrix input: int8 + {d, d*sum}, f16
  DeviceBuffer scratch_f16;                      // cuBLAS path: one dequantized weight chunk
  int64_t scratch_elems = 0;
  DeviceBuffer logits, tokens_dev, rows_dev, ranges_dev;
  DeviceBuffer stats;    ///< max_tokens RowStats
  DeviceBuffer allowed;  ///< n_vocab bytes, set_allowed()
  bool has_allowed = false;

  /// The pass in progress (embed() sets it; the operations read it).
  struct Pass {
    int64_t n = 0;                   ///< tokens (activation rows)
    int64_t n_rows = 0;              ///< logits rows requested
    const float* pending = nullptr;  ///< projection output still to be added to x (the next norm does)
  } pass;

  model::ForwardDriver driver;

  Impl(const model::Model& m, const GpuForwardOptions& opt)
      : model(m),
        plan(m, opt.max_tokens, 1, opt.rope_mode),
        c(plan.config()),
        gemm(opt.gemm),
        driver(plan, *this) {
    max_tokens_pad = round_up(plan.max_tokens(), kern::kTokenTile);
    if (const std::string why = lacks(model); !why.empty())
      throw Error(c.arch_name + ": " + why + " (run with --device cpu)");
    select_gpu(opt.device);
    check_memory();
    DLLM_CUDA_CHECK(cudaStreamCreateWithFlags(&handles.stream, cudaStreamNonBlocking));
    DLLM_CUBLAS_CHECK(cublasCreate(&handles.cublas));
    DLLM_CUBLAS_CHECK(cublasSetStream(handles.cublas, handles.stream));
    stream = handles.stream;
    cublas = handles.cublas;
    upload_weights();
    allocate();
  }

  /// `device` (a CUDA ordinal), or probe_gpu()'s choice for -1.
  void select_gpu(int device) {
    if (device < 0) {
      info = require_gpu();
      DLLM_CUDA_CHECK(cudaSetDevice(info.device));
      return;
    }
    GpuProbe probe = probe_gpu();
    if (!probe.gpu) throw Error("no GPU found: " + probe.reason + " (run with --device cpu)");
    DLLM_CUDA_CHECK(cudaSetDevice(device));
    cudaDeviceProp prop{};
    DLLM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    info.device = device;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.n_sm = prop.multiProcessorCount;
    DLLM_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  }

  /// What it all needs, before any allocation: weights in their device layout, the small vectors,
  /// activations, the cuBLAS scratch and the logits rows. Throws when the GPU has less free.
  void check_memory() {
    size_t need = 0;
    int64_t max_mat_elems = 0;
    for (const gguf::TensorInfo* t : gpu_matrices(model)) {
      device_type(*t);  // throws for unsupported types before anything is uploaded
      need += static_cast<size_t>(device_row_bytes(*t) * t->ne[1]);
      max_mat_elems = std::max(max_mat_elems, t->ne[0] * t->ne[1]);
    }
    const model::ActivationWidths& w = plan.widths();
    const int64_t L = plan.max_tokens(), Lp = max_tokens_pad, act_width = w.widest_input();
    need += static_cast<size_t>(model.layers().size()) * (2 * w.embd + w.q + 2 * w.kv) * 4 + w.embd * 4 +
            2 * L * (c.head_dim / 2) * 4;  // norms, biases, RoPE table
    // Scratch for one dequantized weight chunk (cuBLAS path, also F16/F32 matrices on the int8
    // path): the largest layer matrix, capped at 256 Mi elements (512 MiB) for the LM head.
    scratch_elems = std::min<int64_t>(max_mat_elems, int64_t(256) << 20);
    need += static_cast<size_t>(L) * 4 *
                (2 * w.embd + 2 * w.q + 2 * w.kv + 2 * w.ff) +  // x proj q att k v gate up
            static_cast<size_t>(Lp) * act_width * (1 + 2) +
            static_cast<size_t>(Lp) * (act_width / 32) * 8 + static_cast<size_t>(scratch_elems) * 2 +
            static_cast<size_t>(L) * c.n_vocab * 4 + 4 * L * 4;
    need += size_t(256) << 20;  // cuBLAS workspace / context
    if (need > info.free_bytes) {
      throw Error("model needs " + std::to_string(static_cast<long long>(need / kMiB)) +
                  " MiB of GPU memory, GPU " + std::to_string(info.device) + " (" + info.name + ") has " +
                  std::to_string(static_cast<long long>(info.free_bytes / kMiB)) +
                  " MiB free (try --device cpu or a shorter canvas)");
    }
  }

  /// One f32 vector to the device (a norm weight, a bias, a RoPE table); empty stays unallocated.
  DeviceBuffer upload_vec(std::span<const float> v) {
    DeviceBuffer b(v.size() * sizeof(float));
    if (!v.empty()) DLLM_CUDA_CHECK(cudaMemcpy(b.as<void>(), v.data(), b.bytes(), cudaMemcpyHostToDevice));
    weight_bytes += b.bytes();
    return b;
  }

  /// Every weight, norm, bias and the RoPE table, releasing each tensor's mapped pages behind it so
  /// host RSS stays small.
  void upload_weights() {
    for (const model::LayerWeights& lw : model.layers()) {
      Layer l;
      l.q = upload(*lw.attn_q);
      l.k = upload(*lw.attn_k);
      l.v = upload(*lw.attn_v);
      l.o = upload(*lw.attn_output);
      l.gate = upload(*lw.ffn_gate);
      l.up = upload(*lw.ffn_up);
      l.down = upload(*lw.ffn_down);
      l.attn_norm = upload_vec(lw.attn_norm);
      l.ffn_norm = upload_vec(lw.ffn_norm);
      l.bq = upload_vec(lw.attn_q_bias);
      l.bk = upload_vec(lw.attn_k_bias);
      l.bv = upload_vec(lw.attn_v_bias);
      layers.push_back(std::move(l));
    }
    const bool tied = &model.output() == &model.token_embd();
    output = upload(model.output(), /*release=*/!tied);
    embd = upload(model.token_embd());
    output_norm = upload_vec(model.output_norm());
    const model::RopeTable rope = plan.make_rope_tables()[0];  // lacks(): one table, n_rot = head_dim
    rope_cos = upload_vec(rope.cos_rows());
    rope_sin = upload_vec(rope.sin_rows());
  }

  /// Every activation buffer, sized for max_tokens rows (the one segment of a pass is at most that).
  void allocate() {
    auto alloc = [&](size_t bytes) {
      DeviceBuffer b(bytes);
      buffer_bytes += bytes;
      return b;
    };
    const model::ActivationWidths& w = plan.widths();
    const int64_t L = plan.max_tokens(), Lp = max_tokens_pad, act_width = w.widest_input();
    x = alloc(L * w.embd * 4);
    proj = alloc(L * w.embd * 4);
    q = alloc(L * w.q * 4);
    att = alloc(L * w.q * 4);
    k = alloc(L * w.kv * 4);
    v = alloc(L * w.kv * 4);
    gate = alloc(L * w.ff * 4);
    up = alloc(L * w.ff * 4);
    act_q = alloc(Lp * act_width);
    act_ds = alloc(Lp * (act_width / 32) * 8);
    act_f16 = alloc(Lp * act_width * 2);
    // The padding rows of the int8 input are read by the GEMM (results discarded): keep them finite.
    DLLM_CUDA_CHECK(cudaMemset(act_q.as<void>(), 0, act_q.bytes()));
    DLLM_CUDA_CHECK(cudaMemset(act_ds.as<void>(), 0, act_ds.bytes()));
    scratch_f16 = alloc(scratch_elems * 2);
    logits = alloc(L * c.n_vocab * 4);
    tokens_dev = alloc(L * 4);
    rows_dev = alloc(L * 4);
    ranges_dev = alloc(L * 2 * 4);
    stats = alloc(L * sizeof(RowStats));
    // The memsets above ran on the legacy default stream, which a non-blocking stream does not wait for.
    DLLM_CUDA_CHECK(cudaDeviceSynchronize());
  }

  /// Uploads one matrix in its device layout (Q6_K repacked to padded blocks in host chunks) and
  /// then releases its mapped pages (unless `release` is false: a tied output / embedding).
  DevMatrix upload(const gguf::TensorInfo& t, bool release = true) {
    DevMatrix dm;
    dm.type = device_type(t);
    dm.n_in = t.ne[0];
    dm.n_out = t.ne[1];
    dm.row_bytes = device_row_bytes(t);
    dm.data = DeviceBuffer(static_cast<size_t>(dm.row_bytes * dm.n_out));
    weight_bytes += dm.data.bytes();
    const uint8_t* src = model.data(t);
    if (t.type != gguf::GgmlType::Q6_K) {
      DLLM_CUDA_CHECK(cudaMemcpy(dm.data.as<void>(), src, dm.data.bytes(), cudaMemcpyHostToDevice));
    } else {
      const int64_t n_blocks = dm.n_out * (dm.n_in / quant::kQK_K);
      constexpr int64_t kChunk = 16384;  // blocks per staging copy (3.5 MiB)
      std::vector<uint8_t> staging(static_cast<size_t>(kChunk * kern::kQ6KPaddedBytes), 0);
      for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunk) {
        const int64_t nb = std::min(kChunk, n_blocks - b0);
        for (int64_t b = 0; b < nb; ++b) {
          std::memcpy(&staging[b * kern::kQ6KPaddedBytes], src + (b0 + b) * sizeof(quant::block_q6_K),
                      sizeof(quant::block_q6_K));
        }
        DLLM_CUDA_CHECK(cudaMemcpy(dm.data.as<uint8_t>() + b0 * kern::kQ6KPaddedBytes, staging.data(),
                                   nb * kern::kQ6KPaddedBytes, cudaMemcpyHostToDevice));
      }
    }
    if (release) model.file().release_pages(t);
    return dm;
  }

  /// y[t * ldy + o] = W x_t for t < n_tok from the current matrix input (act_*).
  void matmul(const DevMatrix& w, int64_t n_tok, float* y, int64_t ldy) {
    if (gemm == GpuGemm::kInt8 && w.quantized()) {
      kern::gemm_int8(w.type, w.data.as<void>(), w.row_bytes, w.n_out, w.n_in, act_q.as<int8_t>(),
                      act_ds.as<float>(), n_tok, y, ldy, stream);
      return;
    }
    // Reference path: dequantize a chunk of rows to f16, then y_chunk = W_chunk x in cuBLAS
    // (column-major view: C (rows x n_tok, ld ldy) = W_chunk^T' ... i.e. op(A) = A^T with A the
    // n_in x rows column-major view of the row-major chunk).
    const int64_t chunk = std::max<int64_t>(1, std::min(w.n_out, scratch_elems / w.n_in));
    const float alpha = 1.0f, beta = 0.0f;
    for (int64_t r0 = 0; r0 < w.n_out; r0 += chunk) {
      const int64_t nr = std::min(chunk, w.n_out - r0);
      kern::dequant_rows(w.type, w.data.as<void>(), w.row_bytes, w.n_in, nullptr, r0, nr, nullptr,
                         scratch_f16.as<uint16_t>(), w.n_in, stream);
      DLLM_CUBLAS_CHECK(cublasGemmEx(
          cublas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nr), static_cast<int>(n_tok),
          static_cast<int>(w.n_in), &alpha, scratch_f16.as<void>(), CUDA_R_16F, static_cast<int>(w.n_in),
          act_f16.as<void>(), CUDA_R_16F, static_cast<int>(w.n_in), &beta, y + r0, CUDA_R_32F,
          static_cast<int>(ldy), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
  }

  /// Uploads the allowed-id mask used by forward_stats (n_vocab bytes).
  void set_allowed(std::span<const uint8_t> allowed_ids) {
    if (static_cast<int64_t>(allowed_ids.size()) != output.n_out) {
      throw Error("allowed-id mask has " + std::to_string(allowed_ids.size()) +
                  " entries, expected n_vocab = " + std::to_string(output.n_out));
    }
    if (allowed.bytes() == 0) allowed = DeviceBuffer(static_cast<size_t>(output.n_out));
    DLLM_CUDA_CHECK(
        cudaMemcpy(allowed.as<void>(), allowed_ids.data(), allowed_ids.size(), cudaMemcpyHostToDevice));
    has_allowed = true;
  }

  /// The pass of tokens without copying logits to the host, then the statistics of each requested
  /// row on the device.
  void forward_stats(std::span<const int32_t> tokens, std::span<const int32_t> rows, RowStats* out) {
    forward::Segment seg;
    seg.tokens = tokens;
    seg.logit_rows = rows;  // logits null: they stay in the device buffer
    driver.forward({&seg, 1});
    const auto n_rows = static_cast<int64_t>(rows.size());
    if (n_rows > 0) {
      kern::row_stats(logits.as<float>(), n_rows, output.n_out, output.n_out,
                      has_allowed ? allowed.as<uint8_t>() : nullptr, stats.as<RowStats>(), stream);
      DLLM_CUDA_CHECK(
          cudaMemcpyAsync(out, stats.as<void>(), n_rows * sizeof(RowStats), cudaMemcpyDeviceToHost, stream));
    }
    DLLM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // ---- model::DeviceOps ----

  forward::Capabilities capabilities() const override {
    forward::Capabilities caps;
    caps.masks = true;
    caps.max_rows = plan.max_tokens();
    caps.max_segments = 1;
    return caps;
  }
  int64_t n_vocab() const override { return output.n_out; }
  const void* kv_owner() const override { return this; }
  /// The buffers hold max_tokens rows from the constructor on (its memory check covers them).
  void reserve(const model::PassLayout&) override {}
  void reserve_kv(forward::KvState&, int64_t) override {
    throw Error("forward: the GPU keeps no K/V state");  // capabilities().kv_state is false
  }
  void moe_ffn(const model::PassLayout&, size_t) override {
    throw Error(c.arch_name + ": MoE models run on the CPU only for now (run with --device cpu)");  // lacks()
  }

  /// The segment's tokens and LM-head rows to the device, then x = token_embd[tokens].   n x d
  void embed(const model::PassLayout& p) override {
    pass = Pass{p.n_rows, p.n_head_rows, nullptr};
    DLLM_CUDA_CHECK(
        cudaMemcpyAsync(tokens_dev.as<void>(), p.tokens.data(), pass.n * 4, cudaMemcpyHostToDevice, stream));
    if (pass.n_rows > 0) {
      DLLM_CUDA_CHECK(cudaMemcpyAsync(rows_dev.as<void>(), p.head_rows.data(), pass.n_rows * 4,
                                      cudaMemcpyHostToDevice, stream));
    }
    kern::dequant_rows(embd.type, embd.data.as<void>(), embd.row_bytes, c.n_embd, tokens_dev.as<int32_t>(), 0,
                       pass.n, x.as<float>(), nullptr, c.n_embd, stream);
  }

  /// x += pending, then the next matrix input = RMSNorm(x) * w in int8 (and f16, rounded as
  /// `first` reads it).                                                                n x d
  void norm(const DeviceBuffer& w, const DevMatrix& first) {
    kern::add_rmsnorm_quant(x.as<float>(), pass.pending, true, w.as<float>(), c.rms_eps, pass.n, c.n_embd,
                            nullptr, act_f16.as<uint16_t>(), first.quantized(), act_q.as<int8_t>(),
                            act_ds.as<float>(), stream);
    pass.pending = nullptr;
  }

  /// The norm before attention (its first reader: Wq) or before the FFN (Wgate).
  void norm(const model::PassLayout&, size_t il, model::NormSite site) override {
    const Layer& l = layers[il];
    if (site == model::NormSite::kAttention)
      norm(l.attn_norm, l.q);
    else
      norm(l.ffn_norm, l.gate);
  }

  /// kQkv: q = h Wq (n x n_q), k = h Wk, v = h Wv (n x n_kv). kO: the attention output as the input
  /// of Wo, then proj = att Wo (n x d), left pending.
  void project(const model::PassLayout&, size_t il, model::Projection which) override {
    const Layer& l = layers[il];
    const int64_t n = pass.n;
    if (which == model::Projection::kQkv) {
      matmul(l.q, n, q.as<float>(), plan.widths().q);
      matmul(l.k, n, k.as<float>(), plan.widths().kv);
      matmul(l.v, n, v.as<float>(), plan.widths().kv);
      return;
    }
    kern::quantize_rows(att.as<float>(), n, plan.widths().q, act_f16.as<uint16_t>(), l.o.quantized(),
                        act_q.as<int8_t>(), act_ds.as<float>(), stream);
    matmul(l.o, n, proj.as<float>(), c.n_embd);
    pass.pending = proj.as<float>();
  }

  /// + biases (null without qkv_bias), RoPE at positions 0..n-1 (the segment starts at 0: no state).
  void qk_norm_rope(const model::PassLayout&, size_t il) override {
    const Layer& l = layers[il];
    const model::LayerDesc& desc = plan.layer(il);
    kern::bias_rope(q.as<float>(), k.as<float>(), v.as<float>(), desc.qkv_bias ? l.bq.as<float>() : nullptr,
                    desc.qkv_bias ? l.bk.as<float>() : nullptr, desc.qkv_bias ? l.bv.as<float>() : nullptr,
                    rope_cos.as<float>(), rope_sin.as<float>(), pass.n, c.n_head, c.n_head_kv, c.head_dim,
                    desc.rope_mode == model::RopeMode::kNeox, stream);
  }

  /// att = softmax(q k^T / sqrt(hd)) v per head, each row over its mask range (none: every row).
  void attention(const model::PassLayout& p, size_t il) override {
    const forward::KeyRange* ranges = p.key_ranges(plan.layer(il).window, 0);
    if (ranges != nullptr) {
      static_assert(sizeof(forward::KeyRange) == 2 * sizeof(int32_t));
      DLLM_CUDA_CHECK(cudaMemcpyAsync(ranges_dev.as<void>(), ranges, pass.n * sizeof(forward::KeyRange),
                                      cudaMemcpyHostToDevice, stream));
    }
    const int64_t hd = c.head_dim;
    kern::attention(q.as<float>(), k.as<float>(), v.as<float>(), ranges ? ranges_dev.as<int32_t>() : nullptr,
                    att.as<float>(), pass.n, c.n_head, c.n_head_kv, hd,
                    1.0f / std::sqrt(static_cast<float>(hd)), stream);
  }

  /// proj = (silu(h Wgate) * (h Wup)) Wdown with h the normed rows, left pending (FfnKind::kDense).
  void ffn(const model::PassLayout&, size_t il) override {
    const Layer& l = layers[il];
    const int64_t n = pass.n;
    matmul(l.gate, n, gate.as<float>(), c.n_ff);  // gate, up: n x n_ff
    matmul(l.up, n, up.as<float>(), c.n_ff);
    // silu(gate) * up, as the input of Wdown
    kern::silu_mul_quant(gate.as<float>(), up.as<float>(), n, c.n_ff, act_f16.as<uint16_t>(),
                         l.down.quantized(), act_q.as<int8_t>(), act_ds.as<float>(), stream);
    matmul(l.down, n, proj.as<float>(), c.n_embd);  // proj: n x d
    pass.pending = proj.as<float>();
  }

  /// logits = (RMSNorm(x[rows] + pending) * output_norm) Woutput, only for the requested rows (x is
  /// not written back), into the device buffer `logits` and, when the segment has a host buffer,
  /// there too (the pass then ends synchronized).                         n_rows x n_vocab
  void lm_head(const model::PassLayout& p) override {
    float* host = p.segs[0].logits;
    if (pass.n_rows > 0) {
      kern::add_rmsnorm_quant(x.as<float>(), pass.pending, false, output_norm.as<float>(), c.rms_eps,
                              pass.n_rows, c.n_embd, rows_dev.as<int32_t>(), act_f16.as<uint16_t>(),
                              output.quantized(), act_q.as<int8_t>(), act_ds.as<float>(), stream);
      matmul(output, pass.n_rows, logits.as<float>(), output.n_out);
      if (host != nullptr) {
        DLLM_CUDA_CHECK(cudaMemcpyAsync(host, logits.as<void>(), pass.n_rows * output.n_out * 4,
                                        cudaMemcpyDeviceToHost, stream));
      }
    }
    if (host != nullptr || pass.n_rows == 0) DLLM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
};

GpuForward::GpuForward(const model::Model& model, const GpuForwardOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {}
GpuForward::~GpuForward() = default;

void GpuForward::forward(std::span<const forward::Segment> segments) {
  impl_->driver.forward(segments);
}
forward::Capabilities GpuForward::capabilities() const {
  return impl_->capabilities();
}
void GpuForward::set_allowed(std::span<const uint8_t> allowed) {
  impl_->set_allowed(allowed);
}
void GpuForward::forward_stats(std::span<const int32_t> tokens, std::span<const int32_t> rows,
                               RowStats* stats) {
  impl_->forward_stats(tokens, rows, stats);
}
int64_t GpuForward::n_vocab() const {
  return impl_->output.n_out;
}
int64_t GpuForward::max_tokens() const {
  return impl_->plan.max_tokens();
}
GpuGemm GpuForward::gemm() const {
  return impl_->gemm;
}
const GpuInfo& GpuForward::gpu() const {
  return impl_->info;
}
size_t GpuForward::weight_bytes() const {
  return impl_->weight_bytes;
}
size_t GpuForward::buffer_bytes() const {
  return impl_->buffer_bytes;
}

std::unique_ptr<GpuForward> make_gpu_forward(const model::Model& model, const GpuForwardOptions& options) {
  return std::make_unique<GpuForward>(model, options);
}

}  // namespace dllm::cuda
