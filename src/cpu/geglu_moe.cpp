// GegluMoe (geglu_moe.h).
#include "cpu/geglu_moe.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/ops.h"
#include "model/model.h"
#include "quant/quant.h"

namespace dllm::cpu {

GegluExperts make_geglu_experts(const model::Model& m, const model::LayerWeights& lw, Isa isa,
                                WeightLayout layout) {
  GegluExperts ex;
  auto make = [&](const gguf::TensorInfo& t3, int64_t e) {
    const gguf::TensorInfo slice = model::expert_matrix(t3, e);
    std::unique_ptr<Matrix> mat = make_matrix(slice, m.data(slice), isa, layout);
    if (mat->owns_data()) m.file().release_pages(slice);
    return mat;
  };
  for (int64_t e = 0; e < lw.ffn_gate_up_exps->ne[2]; ++e) {
    ex.gate_up.push_back(make(*lw.ffn_gate_up_exps, e));
    ex.down.push_back(make(*lw.ffn_down_exps, e));
  }
  return ex;
}

GegluMoe::GegluMoe(const model::ModelConfig& c, const std::vector<GegluExperts>& layers, Isa isa,
                   int n_threads)
    : c_(c), rk_(&row_kernels(isa)), n_threads_(n_threads), ones_(static_cast<size_t>(c.n_embd), 1.0f) {
  for (const GegluExperts& ex : layers) {
    for (const auto& mat : ex.gate_up) gate_up_users_.push_back(mat.get());
    for (const auto& mat : ex.down) down_users_.push_back(mat.get());
  }
}

void GegluMoe::size_for(int64_t rows) {
  if (rows <= rows_cap_) return;
  const int64_t k = c_.n_expert_used, d = c_.n_embd, f = c_.n_ff_exp;
  m_.assign(static_cast<size_t>(rows * d), 0.0f);
  router_in_.assign(static_cast<size_t>(rows * d), 0.0f);
  in_ = ProjectionInput(rows * k, d, gate_up_users_);
  gu_.assign(static_cast<size_t>(rows * k * 2 * f), 0.0f);
  act_ = ProjectionInput(rows * k, f, down_users_);
  down_.assign(static_cast<size_t>(rows * k * d), 0.0f);
  rows_cap_ = rows;
}

void GegluMoe::forward(const model::LayerWeights& lw, const GegluExperts& ex, const float* a, int64_t n,
                       float* out) {
  size_for(n);
  const int64_t d = c_.n_embd, E = c_.n_expert, k = c_.n_expert_used, f = c_.n_ff_exp;
  routing_.n_rows = n;
  routing_.n_expert = E;
  routing_.k = k;
  routing_.expert.resize(static_cast<size_t>(n * k));
  routing_.weight.resize(static_cast<size_t>(n * k));
  routing_.probs.resize(static_cast<size_t>(n * E));
  const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
#pragma omp parallel for schedule(static) num_threads(n_threads_)
  for (int64_t t = 0; t < n; ++t) {
    float* r = &router_in_[t * d];
    rk_->rmsnorm(a + t * d, ones_.data(), r, d, c_.rms_eps);
    for (int64_t i = 0; i < d; ++i) r[i] = r[i] * inv_sqrt_d * lw.ffn_gate_inp_scale[i];
    rk_->rmsnorm(a + t * d, lw.pre_ffw_norm_2.data(), &m_[t * d], d, c_.rms_eps);
  }
  // The router's logits four experts at a time (bit-identical to a dot_f32 each), then per row.
  moe_router_logits(*rk_, lw.ffn_gate_inp.data(), E, router_in_.data(), n, d, routing_.probs.data(),
                    n_threads_);
#pragma omp parallel for schedule(static) num_threads(n_threads_)
  for (int64_t t = 0; t < n; ++t)
    moe_route_row(nullptr, E, &router_in_[t * d], d, k, /*norm=*/true, &routing_.probs[t * E],
                  &routing_.expert[t * k], &routing_.weight[t * k]);
  moe_group(routing_, groups_);
  const int64_t nk = n * k;
#pragma omp parallel for schedule(static) num_threads(n_threads_)
  for (int64_t i = 0; i < nk; ++i) {
    std::copy_n(&m_[groups_.src_row[i] * d], d, in_.row(i));
    in_.prepare_row(*rk_, i);
  }
  // Work items: (expert, block of output rows) of one matrix kind over that expert's grouped rows.
  auto run = [&](bool gate_up) {
    const int64_t n_out = gate_up ? 2 * f : d, chunk = 64;
    const int64_t per = (n_out + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads_)
    for (int64_t item = 0; item < E * per; ++item) {
      const int64_t e = item / per, b = (item % per) * chunk;
      const int64_t r0 = groups_.begin[e], cnt = groups_.begin[e + 1] - r0;
      if (cnt == 0) continue;
      const int64_t end = std::min(n_out, b + chunk);
      if (gate_up)
        ex.gate_up[e]->multiply(in_.view(r0, cnt), b, end, &gu_[r0 * 2 * f], 2 * f);
      else
        ex.down[e]->multiply(act_.view(r0, cnt), b, end, &down_[r0 * d], d);
    }
  };
  run(true);
#pragma omp parallel for schedule(static) num_threads(n_threads_)
  for (int64_t i = 0; i < nk; ++i) {
    const float* g = &gu_[i * 2 * f];
    float* y = act_.row(i);
    rk_->gelu_mul(g, g + f, y, f);  // ggml_vec_geglu_f32
    act_.prepare_row(*rk_, i);
  }
  run(false);
#pragma omp parallel for schedule(static) num_threads(n_threads_)
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * d;
    std::fill_n(o, d, 0.0f);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = routing_.expert[t * k + j];
      const float s = lw.ffn_down_exps_scale[e], w = routing_.weight[t * k + j];
      const float* y = &down_[groups_.grouped[t * k + j] * d];
      for (int64_t i = 0; i < d; ++i) o[i] += (y[i] * s) * w;
    }
  }
}

}  // namespace dllm::cpu
