// Scalar reference implementations of the row operations in ops.h.
#include "cpu/ops.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "quant/quant.h"

namespace dllm::cpu {

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          model::RopeMode mode, int64_t n_rot) {
  const int64_t half = (n_rot > 0 ? n_rot : head_dim) / 2;
  // One loop per mode with constant strides, so the compiler vectorizes each (the same arithmetic
  // per pair either way: x0 cos - x1 sin, x0 sin + x1 cos).
  if (mode == model::RopeMode::kNorm) {
    // Pair i = elements (2i, 2i + 1) (ggml's GGML_ROPE_TYPE_NORM, LLaMA-style).
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + h * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos[i] - x1 * sin[i];
        v[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
      }
    }
    return;
  }
  // Pair i = elements (i, i + n_rot/2) (GGML_ROPE_TYPE_NEOX, Qwen2 / Dream).
  for (int64_t h = 0; h < n_heads; ++h) {
    float* a = x + h * head_dim;
    float* b = a + half;
    for (int64_t i = 0; i < half; ++i) {
      const float x0 = a[i], x1 = b[i];
      a[i] = x0 * cos[i] - x1 * sin[i];
      b[i] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (; i < n; ++i) acc[0] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void attention_row(const float* q, const float* k, int64_t k_stride, const float* v, int64_t v_stride,
                   int64_t n_kv, int64_t head_dim, float scale, float* scores, float* out) {
  float max = -INFINITY;
  for (int64_t j = 0; j < n_kv; ++j) {
    scores[j] = dot_f32(q, k + j * k_stride, head_dim) * scale;
    if (scores[j] > max) max = scores[j];
  }
  double sum = 0.0;
  for (int64_t j = 0; j < n_kv; ++j) {
    scores[j] = std::exp(scores[j] - max);
    sum += scores[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n_kv; ++j) {
    const float p = scores[j] * inv;
    const float* vj = v + j * v_stride;
    for (int64_t d = 0; d < head_dim; ++d) out[d] += p * vj[d];
  }
}

void attention_queries(const float* q, int64_t n_q, const float* k, const float* v, int64_t n_kv,
                       int64_t n_head, int64_t n_head_kv, int64_t head_dim, float scale, float* out,
                       float* scratch, int64_t scratch_stride, int n_threads) {
  const int64_t group = n_head / n_head_kv;
  const int64_t q_stride = n_head * head_dim, kv_stride = n_head_kv * head_dim;
#pragma omp parallel for schedule(dynamic, 4) num_threads(n_threads)
  for (int64_t item = 0; item < n_head * n_q; ++item) {
    const int64_t h = item / n_q, t = item % n_q;
    const int64_t kvh = h / group;
    float* scores = scratch + static_cast<int64_t>(omp_get_thread_num()) * scratch_stride;
    attention_row(q + t * q_stride + h * head_dim, k + kvh * head_dim, kv_stride, v + kvh * head_dim,
                  kv_stride, n_kv, head_dim, scale, scores, out + t * q_stride + h * head_dim);
  }
}

void attention(const float* q, const float* k, const float* v, int64_t n, int64_t n_head, int64_t n_head_kv,
               int64_t head_dim, float scale, float* out, float* scratch, int64_t scratch_stride,
               int n_threads) {
  attention_queries(q, n, k, v, n, n_head, n_head_kv, head_dim, scale, out, scratch, scratch_stride,
                    n_threads);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

const float* gelu_f16_table() {
  // ggml_gelu_f32 (ggml-cpu/vec.h) on the f16 value of x, stored as f16 in ggml_table_gelu_f16: one
  // entry per f16 bit pattern, made once (a tanhf per call was about a twentieth of a step).
  static const std::vector<float> table = [] {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f, kCoefA = 0.044715f;
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < t.size(); ++i) {
      const float h = quant::fp16_to_fp32(static_cast<uint16_t>(i));
      const float g = 0.5f * h * (1.0f + std::tanh(kSqrt2OverPi * h * (1.0f + kCoefA * h * h)));
      t[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(g));
    }
    return t;
  }();
  return table.data();
}

float gelu_f16(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return gelu_f16_table()[quant::fp32_to_fp16(x)];
}

void gelu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_f16(gate[i]) * up[i];
}

void softmax_f16(const float* x, float scale, float* y, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i] * scale);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += y[i] = std::exp(x[i] * scale - m);
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(y[i] * inv));
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

}  // namespace dllm::cpu
