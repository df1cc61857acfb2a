// The row kernels of the GPU forward pass: weight-row decoding (embedding lookup, cuBLAS scratch),
// fused add + RMSNorm + quantize, quantize, SwiGLU + quantize, bias + RoPE, and attention. Each one
// replaces a function of src/cpu/ops.cpp or src/quant (named in kernels.h) and is tested against it
// in tests/cuda/ops_test.cpp.
#include <algorithm>

#include "cuda/common.cuh"
#include "cuda/kernels.h"
#include "quant/k_scales.h"

namespace dllm::cuda::kern {

namespace {

// ---------------------------------------------------------------------------------------------
// Weight decoding: one value per thread (coalesced writes), the block header re-read from L1.

/// Value e of a weight row (ggml formulas, see src/quant/q4_k.cpp and q6_k.cpp).
__device__ __forceinline__ float weight_value(WType type, const uint8_t* row, int64_t e) {
  switch (type) {
    case WType::kQ4_K: {
      // x = d * sc[j] * q - dmin * m[j]; sub-block j = i / 32 lives in chunk j / 2 of 32 bytes,
      // low nibbles for even j, high for odd j.
      const uint8_t* b = row + (e / 256) * kQ4KBytes;
      const int i = static_cast<int>(e % 256), j = i / 32, l = i % 32;
      int sc, m;
      quant::q4k_scale_min(j, b + 4, sc, m);
      const uint8_t byte = b[16 + 32 * (j / 2) + l];
      const int q = (j & 1) ? (byte >> 4) : (byte & 0xf);
      return (load_f16(b) * static_cast<float>(sc)) * static_cast<float>(q) -
             load_f16(b + 2) * static_cast<float>(m);
    }
    case WType::kQ6_K: {
      // x = d * scales[i / 16] * (q - 32); half h = i / 128, within it r = 32 g + l takes its low
      // nibble from ql[64 h + l + 32 (g & 1)] (high nibble for g >= 2) and 2 bits from qh[32 h + l].
      const uint8_t* b = row + (e / 256) * kQ6KPaddedBytes;
      const int i = static_cast<int>(e % 256), h = i / 128, r = i % 128, g = r / 32, l = r % 32;
      const uint8_t lo_byte = b[64 * h + l + 32 * (g & 1)];
      const int lo = g >= 2 ? (lo_byte >> 4) : (lo_byte & 0xf);
      const int hi = (b[128 + 32 * h + l] >> (2 * g)) & 3;
      const int q = (lo | (hi << 4)) - 32;
      const float dj = load_f16(b + 208) * static_cast<float>(static_cast<int8_t>(b[192 + i / 16]));
      return dj * static_cast<float>(q);
    }
    case WType::kF16:
      return __half2float(reinterpret_cast<const __half*>(row)[e]);
    case WType::kF32:
      return reinterpret_cast<const float*>(row)[e];
    case WType::kBF16: {
      const uint32_t bits = static_cast<uint32_t>(reinterpret_cast<const uint16_t*>(row)[e]) << 16;
      return __uint_as_float(bits);
    }
  }
  return 0.0f;
}

__global__ void dequant_rows_kernel(WType type, const uint8_t* w, int64_t row_bytes, int64_t n_in,
                                    const int32_t* row_ids, int64_t row0, float* out32, __half* out16,
                                    int64_t ld) {
  // Rows on grid x (up to 2^31 - 1: a whole LM head chunk), 256-value slices of the row on grid y.
  const int64_t j = blockIdx.x;
  const int64_t r = row_ids ? row_ids[j] : row0 + j;
  const uint8_t* row = w + r * row_bytes;
  for (int64_t e = blockIdx.y * int64_t(blockDim.x) + threadIdx.x; e < n_in;
       e += int64_t(gridDim.y) * blockDim.x) {
    const float v = weight_value(type, row, e);
    if (out32) out32[j * ld + e] = v;
    if (out16) out16[j * ld + e] = __float2half_rn(v);
  }
}

// ---------------------------------------------------------------------------------------------
// Row kernels: one block of kRowThreads = 256 threads per token row, visiting the row 256 values at a
// time (thread x holds value base + x), so one pass of the block is one Q8_K block and warp w holds
// its 32-value group w. Every thread re-reads only values it wrote itself.
//
// Matrix inputs are rounded exactly as ggml-cpu's quantize_row_q8_K_ref rounds them (what the CPU
// path and llama.cpp's reference logits do): per 256 values, max = the signed value of largest
// magnitude (the first on ties), iscale = -127 / max, q = round-half-even(iscale * x) clamped to 127,
// d = 1 / iscale. The result is stored in the Q8_1 shape (kernels.h): the 256-block's d repeated for
// each of its 8 groups of 32, with each group's sum, which the GEMM needs for the Q4_K min term.

constexpr int kRowThreads = 256;
constexpr int kRowWarps = kRowThreads / 32;

struct RowShared {
  double sum[kRowWarps];
  float amax[kRowWarps];
  float max[kRowWarps];
};

/// Sum of doubles over the block (every thread gets the result).
__device__ __forceinline__ double block_sum(double v, RowShared& sh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  __syncthreads();
  if (lane == 0) sh.sum[warp] = v;
  __syncthreads();
  double t = 0.0;
  for (int w = 0; w < kRowWarps; ++w) t += sh.sum[w];
  return t;
}

/// Called by every thread of the block for the 256 values at row offset `base`: this thread's value
/// y (valid: inside the row) is quantized with the block's Q8_K scale. Writes q[i], the f16 copy
/// y16[i] (the dequantized d * q when f16_q8, else y itself) and the {d, d * sum} of each group.
__device__ __forceinline__ void emit_q8k(float y, bool valid, int64_t base, int64_t n, __half* y16,
                                         bool f16_q8, int8_t* q, float* ds, RowShared& sh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i = base + threadIdx.x;
  // Largest |y| in the warp, keeping its sign and the first index on ties.
  float a = valid ? fabsf(y) : -1.0f, v = y;
  int ix = threadIdx.x;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float a2 = __shfl_xor_sync(kFullMask, a, o), v2 = __shfl_xor_sync(kFullMask, v, o);
    const int ix2 = __shfl_xor_sync(kFullMask, ix, o);
    if (a2 > a || (a2 == a && ix2 < ix)) {
      a = a2;
      v = v2;
      ix = ix2;
    }
  }
  __syncthreads();  // the previous block's readers are done with sh
  if (lane == 0) {
    sh.amax[warp] = a;
    sh.max[warp] = v;
  }
  __syncthreads();
  float amax = sh.amax[0], max = sh.max[0];
  for (int w = 1; w < kRowWarps; ++w) {  // warps hold increasing indices: strict > keeps the first
    if (sh.amax[w] > amax) {
      amax = sh.amax[w];
      max = sh.max[w];
    }
  }
  int qi = 0;
  float d = 0.0f;
  if (amax > 0.0f) {
    const float iscale = -127.0f / max;
    qi = min(127, __float2int_rn(iscale * y));
    d = 1.0f / iscale;
  }
  if (!valid) qi = 0;
  const int s = warp_sum_int(qi);
  if (valid) {
    q[i] = static_cast<int8_t>(qi);
    if (y16) y16[i] = __float2half_rn(f16_q8 ? d * static_cast<float>(qi) : y);
    if (lane == 0) {
      ds[2 * (i / 32)] = d;
      ds[2 * (i / 32) + 1] = d * static_cast<float>(s);
    }
  }
}

__global__ void __launch_bounds__(kRowThreads)
    add_rmsnorm_quant_kernel(float* x, const float* add, bool write_back, const float* w, float eps,
                             int64_t n, const int32_t* gather, __half* y16, bool f16_q8, int8_t* q,
                             float* ds) {
  __shared__ RowShared sh;
  const int64_t j = blockIdx.x;
  const int64_t src = gather ? gather[j] : j;
  float* xr = x + src * n;
  const float* ar = add ? add + src * n : nullptr;
  // Pass 1: residual add and the sum of squares, in double as cpu::rmsnorm.
  double ss = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kRowThreads) {
    float v = xr[i];
    if (ar) {
      v += ar[i];
      if (write_back) xr[i] = v;
    }
    ss += static_cast<double>(v) * v;
  }
  const float mean = static_cast<float>(block_sum(ss, sh) / static_cast<double>(n));
  const float scale = 1.0f / sqrtf(mean + eps);
  // Pass 2: y = (v * scale) * w, quantized (this thread's own values from pass 1).
  for (int64_t base = 0; base < n; base += kRowThreads) {
    const int64_t i = base + threadIdx.x;
    const bool valid = i < n;
    float y = 0.0f;
    if (valid) {
      float v = xr[i];
      if (ar && !write_back) v += ar[i];
      y = (v * scale) * w[i];
    }
    emit_q8k(y, valid, base, n, y16 ? y16 + j * n : nullptr, f16_q8, q + j * n, ds + j * (n / 16), sh);
  }
}

__global__ void __launch_bounds__(kRowThreads)
    quantize_rows_kernel(const float* x, const float* up, int64_t n, __half* y16, bool f16_q8, int8_t* q,
                         float* ds) {
  // up == nullptr: plain quantization of x; else SwiGLU silu(x) * up first (cpu::silu_mul).
  __shared__ RowShared sh;
  const int64_t j = blockIdx.x;
  for (int64_t base = 0; base < n; base += kRowThreads) {
    const int64_t i = base + threadIdx.x;
    const bool valid = i < n;
    float y = 0.0f;
    if (valid) {
      y = x[j * n + i];
      if (up) y = y / (1.0f + expf(-y)) * up[j * n + i];
    }
    emit_q8k(y, valid, base, n, y16 ? y16 + j * n : nullptr, f16_q8, q + j * n, ds + j * (n / 16), sh);
  }
}

// ---------------------------------------------------------------------------------------------
// Bias + RoPE: one block per token, one thread per rotated pair.

__global__ void bias_rope_kernel(float* q, float* k, float* v, const float* bq, const float* bk,
                                 const float* bv, const float* cos, const float* sin, int64_t n_head,
                                 int64_t n_head_kv, int64_t hd, bool neox) {
  const int64_t t = blockIdx.x, half = hd / 2;
  const int64_t n_q = n_head * hd, n_kv = n_head_kv * hd;
  const float* ct = cos + t * half;
  const float* st = sin + t * half;
  for (int64_t p = threadIdx.x; p < (n_head + n_head_kv) * half; p += blockDim.x) {
    const int64_t head = p / half, i = p % half;
    const bool is_q = head < n_head;
    const int64_t off = (is_q ? head : head - n_head) * hd;
    float* base = is_q ? q + t * n_q + off : k + t * n_kv + off;
    const float* bias = is_q ? bq : bk;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    float x0 = base[ia], x1 = base[ib];
    if (bias) {
      x0 += bias[off + ia];
      x1 += bias[off + ib];
    }
    base[ia] = x0 * ct[i] - x1 * st[i];
    base[ib] = x0 * st[i] + x1 * ct[i];
  }
  if (bv) {
    for (int64_t e = threadIdx.x; e < n_kv; e += blockDim.x) v[t * n_kv + e] += bv[e];
  }
}

// ---------------------------------------------------------------------------------------------
// Attention: one warp per (head, query); lane holds dims lane, lane + 32, ... (DPL of them). The keys
// of the query's range (all of them without ranges) are visited in order with a running max m,
// running sum l and running output o (online softmax):
// each new score s rescales l and o by exp(m - max(m, s)). The 4 warps of a block take 4
// consecutive queries of one head, so they read the same K / V rows.

constexpr int kAttnWarps = 4;

template <int DPL>
__global__ void __launch_bounds__(32 * kAttnWarps)
    attention_kernel(const float* q, const float* k, const float* v, const int32_t* ranges, float* out,
                     int64_t n, int64_t n_head, int64_t n_head_kv, float scale) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t item = blockIdx.x * int64_t(kAttnWarps) + warp;
  if (item >= n * n_head) return;
  const int64_t h = item / n, t = item % n;
  const int64_t hd = 32 * DPL;
  const int64_t kvh = h / (n_head / n_head_kv);
  const int64_t q_stride = n_head * hd, kv_stride = n_head_kv * hd;
  float qv[DPL], o[DPL];
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    qv[i] = q[t * q_stride + h * hd + 32 * i + lane];
    o[i] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  const int64_t j0 = ranges ? ranges[2 * t] : 0, j1 = ranges ? ranges[2 * t + 1] : n;
  const float* kp = k + j0 * kv_stride + kvh * hd + lane;
  const float* vp = v + j0 * kv_stride + kvh * hd + lane;
  for (int64_t j = j0; j < j1; ++j, kp += kv_stride, vp += kv_stride) {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) s += qv[i] * kp[32 * i];
    s = warp_sum(s) * scale;
    const float m_new = fmaxf(m, s);
    const float corr = expf(m - m_new);  // 0 on the first key (m = -inf)
    const float p = expf(s - m_new);
    l = l * corr + p;
#pragma unroll
    for (int i = 0; i < DPL; ++i) o[i] = o[i] * corr + p * vp[32 * i];
    m = m_new;
  }
  const float inv = 1.0f / l;
#pragma unroll
  for (int i = 0; i < DPL; ++i) out[t * q_stride + h * hd + 32 * i + lane] = o[i] * inv;
}

// ---------------------------------------------------------------------------------------------
// Row statistics of the LM head's output: one block per logits row, three passes over the row
// (max and top-2 with the lowest id on ties; sum of exp in f64; entropy in f64).

constexpr int kStatsThreads = 512;
constexpr int kStatsWarps = kStatsThreads / 32;

/// Running best (v1 at i1, lowest id on ties) and second-best value v2 (a tie for the top counts).
struct Top2 {
  float v1 = -INFINITY;
  int i1 = 0x7fffffff;
  float v2 = -INFINITY;
};

__device__ __forceinline__ void merge(Top2& a, float v1, int i1, float v2) {
  if (v1 > a.v1 || (v1 == a.v1 && i1 < a.i1)) {
    a.v2 = fmaxf(a.v1, v2);
    a.v1 = v1;
    a.i1 = i1;
  } else {
    a.v2 = fmaxf(a.v2, v1);
  }
}

__device__ __forceinline__ double block_sum_d(double v, double* red) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  __syncthreads();
  if (lane == 0) red[warp] = v;
  __syncthreads();
  double t = 0.0;
  for (int w = 0; w < kStatsWarps; ++w) t += red[w];
  return t;
}

__global__ void __launch_bounds__(kStatsThreads)
    row_stats_kernel(const float* logits, int64_t n_vocab, int64_t ld, const uint8_t* allowed,
                     RowStats* out) {
  __shared__ float s_v1[kStatsWarps], s_v2[kStatsWarps];
  __shared__ int s_i1[kStatsWarps];
  __shared__ double red[kStatsWarps];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* l = logits + blockIdx.x * ld;
  Top2 t;
  for (int64_t i = threadIdx.x; i < n_vocab; i += kStatsThreads) {
    if (allowed && !allowed[i]) continue;
    merge(t, l[i], static_cast<int>(i), -INFINITY);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float v1 = __shfl_xor_sync(kFullMask, t.v1, o), v2 = __shfl_xor_sync(kFullMask, t.v2, o);
    const int i1 = __shfl_xor_sync(kFullMask, t.i1, o);
    merge(t, v1, i1, v2);
  }
  if (lane == 0) {
    s_v1[warp] = t.v1;
    s_v2[warp] = t.v2;
    s_i1[warp] = t.i1;
  }
  __syncthreads();
  Top2 all;
  for (int w = 0; w < kStatsWarps; ++w) merge(all, s_v1[w], s_i1[w], s_v2[w]);
  const float mx = all.v1;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n_vocab; i += kStatsThreads) {
    if (allowed && !allowed[i]) continue;
    sum += exp(static_cast<double>(l[i]) - static_cast<double>(mx));
  }
  sum = block_sum_d(sum, red);
  double ent = 0.0;
  for (int64_t i = threadIdx.x; i < n_vocab; i += kStatsThreads) {
    if (allowed && !allowed[i]) continue;
    const double p = exp(static_cast<double>(l[i]) - static_cast<double>(mx)) / sum;
    ent += p * log(p + 1e-10);
  }
  ent = block_sum_d(ent, red);
  if (threadIdx.x == 0) {
    RowStats r;
    r.token = all.i1 == 0x7fffffff ? -1 : all.i1;  // -1: no allowed id
    r.max_logit = mx;
    r.prob = 1.0 / sum;
    r.margin = (1.0 - exp(static_cast<double>(all.v2) - static_cast<double>(mx))) / sum;
    r.neg_entropy = ent;
    out[blockIdx.x] = r;
  }
}

}  // namespace

void dequant_rows(WType type, const void* w, int64_t row_bytes, int64_t n_in, const int32_t* row_ids,
                  int64_t row0, int64_t n_rows, float* out32, uint16_t* out16, int64_t ld,
                  cudaStream_t stream) {
  if (n_rows <= 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>(n_rows),
                  static_cast<unsigned>(std::min<int64_t>(65535, (n_in + kThreads - 1) / kThreads)));
  dequant_rows_kernel<<<grid, kThreads, 0, stream>>>(type, static_cast<const uint8_t*>(w), row_bytes, n_in,
                                                     row_ids, row0, out32, reinterpret_cast<__half*>(out16),
                                                     ld);
  DLLM_CHECK_LAUNCH("dequant_rows_kernel");
}

void add_rmsnorm_quant(float* x, const float* add, bool write_back, const float* w, float eps, int64_t n_rows,
                       int64_t n, const int32_t* gather, uint16_t* y16, bool f16_q8, int8_t* q, float* ds,
                       cudaStream_t stream) {
  if (n_rows <= 0) return;
  add_rmsnorm_quant_kernel<<<static_cast<unsigned>(n_rows), kRowThreads, 0, stream>>>(
      x, add, write_back, w, eps, n, gather, reinterpret_cast<__half*>(y16), f16_q8, q, ds);
  DLLM_CHECK_LAUNCH("add_rmsnorm_quant_kernel");
}

void quantize_rows(const float* x, int64_t n_rows, int64_t n, uint16_t* y16, bool f16_q8, int8_t* q,
                   float* ds, cudaStream_t stream) {
  if (n_rows <= 0) return;
  quantize_rows_kernel<<<static_cast<unsigned>(n_rows), kRowThreads, 0, stream>>>(
      x, nullptr, n, reinterpret_cast<__half*>(y16), f16_q8, q, ds);
  DLLM_CHECK_LAUNCH("quantize_rows_kernel");
}

void silu_mul_quant(const float* gate, const float* up, int64_t n_rows, int64_t n, uint16_t* y16, bool f16_q8,
                    int8_t* q, float* ds, cudaStream_t stream) {
  if (n_rows <= 0) return;
  quantize_rows_kernel<<<static_cast<unsigned>(n_rows), kRowThreads, 0, stream>>>(
      gate, up, n, reinterpret_cast<__half*>(y16), f16_q8, q, ds);
  DLLM_CHECK_LAUNCH("quantize_rows_kernel (silu_mul)");
}

void bias_rope(float* q, float* k, float* v, const float* bq, const float* bk, const float* bv,
               const float* cos, const float* sin, int64_t n_tok, int64_t n_head, int64_t n_head_kv,
               int64_t hd, bool neox, cudaStream_t stream) {
  if (n_tok <= 0) return;
  bias_rope_kernel<<<static_cast<unsigned>(n_tok), 256, 0, stream>>>(q, k, v, bq, bk, bv, cos, sin, n_head,
                                                                     n_head_kv, hd, neox);
  DLLM_CHECK_LAUNCH("bias_rope_kernel");
}

void attention(const float* q, const float* k, const float* v, const int32_t* ranges, float* out,
               int64_t n_tok, int64_t n_head, int64_t n_head_kv, int64_t hd, float scale,
               cudaStream_t stream) {
  if (n_tok <= 0) return;
  const unsigned blocks = static_cast<unsigned>((n_tok * n_head + kAttnWarps - 1) / kAttnWarps);
  const unsigned threads = 32 * kAttnWarps;
  switch (hd / 32) {
    case 1:
      attention_kernel<1>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    case 2:
      attention_kernel<2>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    case 3:
      attention_kernel<3>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    case 4:
      attention_kernel<4>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    case 6:
      attention_kernel<6>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    case 8:
      attention_kernel<8>
          <<<blocks, threads, 0, stream>>>(q, k, v, ranges, out, n_tok, n_head, n_head_kv, scale);
      break;
    default:
      throw Error("attention: head_dim " + std::to_string(hd) +
                  " has no GPU kernel (32, 64, 96, 128, 192 or 256)");
  }
  DLLM_CHECK_LAUNCH("attention_kernel");
}

void row_stats(const float* logits, int64_t n_rows, int64_t n_vocab, int64_t ld, const uint8_t* allowed,
               RowStats* out, cudaStream_t stream) {
  if (n_rows <= 0) return;
  row_stats_kernel<<<static_cast<unsigned>(n_rows), kStatsThreads, 0, stream>>>(logits, n_vocab, ld, allowed,
                                                                                out);
  DLLM_CHECK_LAUNCH("row_stats_kernel");
}

}  // namespace dllm::cuda::kern
