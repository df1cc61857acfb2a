// MoeFfn: the routed FFN of LLaDA-MoE / RND1 as an expert-grouped GEMM (cpu/moe.h says what it
// computes and where the formula comes from). One call runs these passes, each an OpenMP loop whose
// items write disjoint outputs:
//   1. route every row (router logits, softmax, top-k, weights)             rows
//   2. group the n x k (row, expert) pairs by expert (counting sort)         serial, O(n k + E)
//   3. round each input row (Q8_K etc. as the experts read), copy it to its grouped rows   rows
//   4. gate and up of every expert over its rows                             (expert, matrix, row block)
//   5. silu(gate) * up and its rounding for down                             grouped rows
//   6. down of every expert over its rows                                    (expert, row block)
//   7. out_t = sum_j w_tj * down_row(t, j), slot order                       rows
#include "cpu/moe.h"

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <numeric>
#include <string>

#include "base/error.h"
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/ops.h"
#include "model/model.h"
#include "quant/quant.h"

namespace dllm::cpu {

namespace {

/// Output rows per expert work item: a multiple of the kernel's granularity near kTargetRows, a
/// function of the matrix alone (so the split, and every output, does not depend on the thread
/// count). An expert sees about n k / E rows (18 for LLaDA-MoE at a 141-token canvas), so an item of
/// 128 output rows is still ~10 M multiply-adds: big enough that scheduling costs nothing, small
/// enough that 64 experts x 8 blocks balance two threads.
constexpr int64_t kTargetRows = 128;

int64_t expert_chunk_rows(const Matrix& m) {
  const int64_t g = std::max<int64_t>(1, m.row_granularity());
  return std::max<int64_t>(1, kTargetRows / g) * g;
}

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Adds the time since the previous mark to pass `p` of `t` (when on).
class PassClock {
 public:
  PassClock(bool on, MoeTimes& t) : on_(on), t_(t) {
    if (on_) {
      wall_ = wall_now();
      cpu_ = cpu_now();
    }
  }
  void mark(MoePass p) {
    if (!on_) return;
    const double w = wall_now(), c = cpu_now();
    t_.wall_s[static_cast<int>(p)] += w - wall_;
    t_.cpu_s[static_cast<int>(p)] += c - cpu_;
    wall_ = w;
    cpu_ = c;
  }

 private:
  bool on_;
  MoeTimes& t_;
  double wall_ = 0, cpu_ = 0;
};

}  // namespace

void MoeFfn::print_times(int64_t forwards) const {
  if (!timing_ || forwards <= 0) return;
  static constexpr const char* kNames[] = {"route", "gather+q8", "gate/up", "silu*up+q8", "down", "combine"};
  static_assert(std::size(kNames) == static_cast<size_t>(MoePass::kCount));
  const double per = 1e3 / static_cast<double>(forwards);
  std::fprintf(stderr, "moe ffn passes, per forward pass:\n%-14s %10s %10s\n", "pass", "wall ms", "cpu ms");
  for (size_t i = 0; i < std::size(kNames); ++i)
    std::fprintf(stderr, "%-14s %10.1f %10.1f\n", kNames[i], times_.wall_s[i] * per, times_.cpu_s[i] * per);
  const auto gemm = [&](const double* s) {
    return s[static_cast<int>(MoePass::kGateUp)] + s[static_cast<int>(MoePass::kDown)];
  };
  if (gemm(times_.cpu_s) > 0) {
    std::fprintf(stderr,
                 "moe expert gemms: %.1f G int8 ops per CPU-s, %.1f G per wall-s (%.3g G multiply-adds per "
                 "forward pass)\n",
                 2e-9 * times_.expert_macs / gemm(times_.cpu_s),
                 2e-9 * times_.expert_macs / gemm(times_.wall_s),
                 1e-9 * times_.expert_macs / static_cast<double>(forwards));
    static constexpr const char* kBucketNames[] = {"0", "1-2", "3-8", "9-32", "33-128", ">128"};
    static_assert(std::size(kBucketNames) == MoeTimes::kBuckets);
    std::fprintf(stderr, "moe rows per expert, per forward pass:\n%-14s %10s %10s %12s %14s\n", "rows",
                 "experts", "rows", "thread ms", "G ops/thread-s");
    for (int b = 0; b < MoeTimes::kBuckets; ++b) {
      std::fprintf(stderr, "%-14s %10.1f %10.1f %12.1f %14.1f\n", kBucketNames[b],
                   static_cast<double>(times_.expert_count[b]) * per * 1e-3,
                   static_cast<double>(times_.expert_rows[b]) * per * 1e-3, times_.item_s[b] * per,
                   times_.item_s[b] > 0 ? 2e-9 * times_.item_macs[b] / times_.item_s[b] : 0.0);
    }
  }
}

void moe_route_row(const float* router, int64_t n_expert, const float* x, int64_t d, int64_t k, bool norm,
                   float* probs, int32_t* expert, float* weight) {
  // Softmax as ggml_compute_forward_soft_max_f32: subtract the max, exp in f32, sum in double, scale
  // by the f32 reciprocal of the sum.
  float max = -INFINITY;
  for (int64_t e = 0; e < n_expert; ++e) {
    if (router != nullptr) probs[e] = dot_f32(router + e * d, x, d);
    max = std::max(max, probs[e]);
  }
  double sum = 0;
  for (int64_t e = 0; e < n_expert; ++e) {
    probs[e] = std::exp(probs[e] - max);
    sum += probs[e];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t e = 0; e < n_expert; ++e) probs[e] *= inv;

  // Top-k by repeated selection; a later index must be strictly larger to win, so equal
  // probabilities keep index order (see moe.h for how this matches ggml's argsort).
  uint64_t taken_lo = 0;  // experts < 64 already chosen (bitmask); the rest by a linear check
  for (int64_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int64_t e = 0; e < n_expert; ++e) {
      bool taken = false;
      if (e < 64) {
        taken = (taken_lo >> e) & 1u;
      } else {
        for (int64_t i = 0; i < j; ++i) taken |= expert[i] == e;
      }
      if (!taken && (best < 0 || probs[e] > probs[best])) best = static_cast<int32_t>(e);
    }
    expert[j] = best;
    weight[j] = probs[best];
    if (best < 64) taken_lo |= uint64_t{1} << best;
  }
  if (norm) {
    // ggml_sum_rows (accumulated in double, stored as f32), ggml_clamp to the smallest normal f16,
    // ggml_div.
    double s = 0;
    for (int64_t j = 0; j < k; ++j) s += weight[j];
    const float sum_w = std::max(static_cast<float>(s), 6.103515625e-5f);
    for (int64_t j = 0; j < k; ++j) weight[j] = weight[j] / sum_w;
  }
}

void moe_route_row_sigmoid(const float* router, int64_t n_expert, const float* x, int64_t d,
                           const float* bias, int64_t n_groups, int64_t n_group_used, int64_t k, bool norm,
                           float scale, float* scores, float* biased, int32_t* expert, float* weight) {
  for (int64_t e = 0; e < n_expert; ++e) {
    const float logit = router != nullptr ? dot_f32(router + e * d, x, d) : scores[e];
    scores[e] = 1.0f / (1.0f + std::exp(-logit));  // ggml_sigmoid
    biased[e] = bias != nullptr ? scores[e] + bias[e] : scores[e];
  }
  if (n_groups > 1 && n_group_used < n_groups) {
    // Each group's score: the sum of its two largest biased scores; keep the n_group_used best.
    const int64_t per = n_expert / n_groups;
    constexpr int64_t kMaxGroups = 64;
    float group_score[kMaxGroups];
    bool kept[kMaxGroups] = {};
    n_groups = std::min(n_groups, kMaxGroups);  // the config allows no more (model/llada2.cpp)
    n_group_used = std::min(n_group_used, n_groups);
    for (int64_t g = 0; g < n_groups; ++g) {
      float a = -INFINITY, b = -INFINITY;  // the largest and the second largest
      for (int64_t e = g * per; e < (g + 1) * per; ++e) {
        if (biased[e] > a) {
          b = a;
          a = biased[e];
        } else if (biased[e] > b) {
          b = biased[e];
        }
      }
      group_score[g] = a + b;
    }
    for (int64_t j = 0; j < n_group_used; ++j) {
      int64_t best = -1;
      for (int64_t g = 0; g < n_groups; ++g)
        if (!kept[g] && (best < 0 || group_score[g] > group_score[best])) best = g;
      kept[best] = true;
    }
    for (int64_t g = 0; g < n_groups; ++g)
      if (!kept[g])
        for (int64_t e = g * per; e < (g + 1) * per; ++e) biased[e] = -INFINITY;
  }
  // Top-k by repeated selection over the biased scores; a later index must be strictly larger to win.
  for (int64_t j = 0; j < k; ++j) {
    int32_t best = -1;
    for (int64_t e = 0; e < n_expert; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j && !taken; ++i) taken = expert[i] == e;
      if (!taken && (best < 0 || biased[e] > biased[best])) best = static_cast<int32_t>(e);
    }
    expert[j] = best;
    weight[j] = scores[best];
  }
  float div = 1.0f;
  if (norm) {
    double s = 0;  // ggml_sum_rows, then ggml_clamp to the smallest normal f16
    for (int64_t j = 0; j < k; ++j) s += weight[j];
    div = std::max(static_cast<float>(s), 6.103515625e-5f);
  }
  for (int64_t j = 0; j < k; ++j) {
    if (norm) weight[j] = weight[j] / div;
    weight[j] *= scale;  // ggml_scale by expert_weights_scale
  }
}

void moe_router_logits(const RowKernels& rk, const float* router, int64_t n_expert, const float* x, int64_t n,
                       int64_t d, float* logits, int n_threads) {
  constexpr int64_t kRows = 32;
  const int64_t n_quads = (n_expert + 3) / 4;
#pragma omp parallel for schedule(static) num_threads(n_threads) collapse(2)
  for (int64_t t0 = 0; t0 < n; t0 += kRows) {
    for (int64_t q = 0; q < n_quads; ++q) {
      const int64_t t1 = std::min(n, t0 + kRows), e0 = 4 * q;
      if (e0 + 4 > n_expert) {  // the last 1-3 experts
        for (int64_t e = e0; e < n_expert; ++e)
          for (int64_t t = t0; t < t1; ++t) logits[t * n_expert + e] = dot_f32(router + e * d, x + t * d, d);
        continue;
      }
      const float* const rows[4] = {router + e0 * d, router + (e0 + 1) * d, router + (e0 + 2) * d,
                                    router + (e0 + 3) * d};
      float out[16];
      int64_t t = t0;
      for (; t + 4 <= t1; t += 4) {  // four tokens per pass over the four router rows
        const float* const xs[4] = {x + t * d, x + (t + 1) * d, x + (t + 2) * d, x + (t + 3) * d};
        rk.dot_f32_x4x4(rows, xs, d, out);
        for (int u = 0; u < 4; ++u) {
          for (int j = 0; j < 4; ++j) logits[(t + u) * n_expert + e0 + j] = out[4 * u + j];
        }
      }
      for (; t + 2 <= t1; t += 2) {  // then two
        rk.dot_f32_x4x2(rows, x + t * d, x + (t + 1) * d, d, out);
        for (int j = 0; j < 4; ++j) {
          logits[t * n_expert + e0 + j] = out[j];
          logits[(t + 1) * n_expert + e0 + j] = out[4 + j];
        }
      }
      if (t < t1) {
        rk.dot_f32_x4(rows, x + t * d, d, out);
        for (int j = 0; j < 4; ++j) logits[t * n_expert + e0 + j] = out[j];
      }
    }
  }
}

void moe_group(const MoeRouting& r, MoeGroups& g) {
  const int64_t n_slots = r.n_rows * r.k;
  g.begin.assign(static_cast<size_t>(r.n_expert + 1), 0);
  for (int64_t s = 0; s < n_slots; ++s) ++g.begin[static_cast<size_t>(r.expert[s]) + 1];
  for (int64_t e = 0; e < r.n_expert; ++e) g.begin[e + 1] += g.begin[e];
  g.src_row.resize(static_cast<size_t>(n_slots));
  g.grouped.resize(static_cast<size_t>(n_slots));
  g.cursor.assign(g.begin.begin(), g.begin.end() - 1);
  for (int64_t s = 0; s < n_slots; ++s) {
    const int64_t i = g.cursor[static_cast<size_t>(r.expert[s])]++;
    g.src_row[i] = static_cast<int32_t>(s / r.k);
    g.grouped[s] = static_cast<int32_t>(i);
  }
}

WeightLayout expert_layout(const model::ModelConfig& c) {
  const bool few_rows =
      c.block_length > 0 && c.n_expert > 0 && c.block_length * c.n_expert_used <= 4 * c.n_expert;
  return few_rows ? WeightLayout::kCompact : WeightLayout::kFast;
}

MoeExperts make_moe_experts(const model::Model& m, const model::LayerWeights& lw, Isa isa,
                            WeightLayout routed_layout, bool reference) {
  MoeExperts ex;
  const int64_t n_expert = lw.ffn_gate_exps->ne[2];
  auto make = [&](const gguf::TensorInfo& t3, int64_t e) {
    const gguf::TensorInfo slice = model::expert_matrix(t3, e);
    std::unique_ptr<Matrix> mat = reference ? make_matrix_ref(slice, m.data(slice))
                                            : make_matrix(slice, m.data(slice), isa, routed_layout);
    if (mat->owns_data()) m.file().release_pages(slice);
    return mat;
  };
  for (int64_t e = 0; e < n_expert; ++e) {
    ex.gate.push_back(make(*lw.ffn_gate_exps, e));
    ex.up.push_back(make(*lw.ffn_up_exps, e));
    ex.down.push_back(make(*lw.ffn_down_exps, e));
  }
  if (lw.ffn_gate_shexp != nullptr) {
    auto make2d = [&](const gguf::TensorInfo& t) {
      std::unique_ptr<Matrix> mat =
          reference ? make_matrix_ref(t, m.data(t)) : make_matrix(t, m.data(t), isa);
      if (mat->owns_data()) m.file().release_pages(t);
      return mat;
    };
    ex.gate.push_back(make2d(*lw.ffn_gate_shexp));
    ex.up.push_back(make2d(*lw.ffn_up_shexp));
    ex.down.push_back(make2d(*lw.ffn_down_shexp));
  }
  return ex;
}

Activations MoeFfn::Grouped::view(const float* f32_rows, int64_t begin, int64_t count) const {
  Activations a;
  a.n_tokens = count;
  a.n_in = width;
  const int64_t nb = width / quant::kQK_K;
  if (f32_rows != nullptr) a.f32 = f32_rows + begin * width;
  if (!q8k.empty()) {
    a.q8k = q8k.data() + begin * nb;
    a.bs32 = bs32.data() + begin * nb * 8;
  }
  if (!q8u.empty()) a.q8u = q8u.data() + begin * width;
  if (!q80.empty()) {
    a.q8_0 = q80.data() + begin * (width / quant::kQK8_0);
    if (!q80u.empty()) a.q8_0u = q80u.data() + begin * width;
  }
  return a;
}

void MoeFfn::Grouped::quantize(const RowKernels& rk, const float* row, int64_t i) {
  if (!q8k.empty()) {
    const int64_t nb = width / quant::kQK_K;
    rk.quantize_q8_K(row, q8k.data() + i * nb, width);
    qgemm::make_bs32(q8k.data() + i * nb, 1, nb, bs32.data() + i * nb * 8);
    if (!q8u.empty()) qgemm::make_u8(q8k.data() + i * nb, 1, nb, q8u.data() + i * width);
  }
  if (!q80.empty()) {
    const int64_t nb = width / quant::kQK8_0;
    quant::quantize_row_q8_0(row, q80.data() + i * nb, width);
    if (!q80u.empty()) qgemm::make_u8_q8_0(q80.data() + i * nb, 1, nb, q80u.data() + i * width);
  }
}

void MoeFfn::Grouped::copy_row(const Grouped& from, int64_t src, int64_t dst) {
  const auto copy = [&](auto& to, const auto& fr, int64_t per_row) {
    if (to.empty()) return;
    std::memcpy(to.data() + dst * per_row, fr.data() + src * per_row,
                static_cast<size_t>(per_row) * sizeof(to[0]));
  };
  const int64_t nb = width / quant::kQK_K;
  copy(q8k, from.q8k, nb);
  copy(bs32, from.bs32, nb * 8);
  copy(q8u, from.q8u, width);
  copy(q80, from.q80, width / quant::kQK8_0);
  copy(q80u, from.q80u, width);
}

std::string moe_unimplemented(const model::ModelConfig& c) {
  const bool softmax = c.expert_gating == model::ExpertGating::kSoftmax;
  if (softmax && c.expert_selection_bias) return "a selection bias (exp_probs_b) with softmax gating";
  if (softmax && c.n_expert_groups > 1) return "group-limited routing with softmax gating";
  if (c.n_expert_shared > 0 && c.n_expert_shared * c.n_ff_shexp != c.n_ff_exp)
    return "shared experts of a width other than the experts'";
  return "";
}

MoeFfn::MoeFfn(const model::ModelConfig& c, const std::vector<MoeExperts>& layers, int64_t max_rows, Isa isa,
               int n_threads)
    : c_(c), n_threads_(std::max(1, n_threads)), rk_(&row_kernels(isa)) {
  if (!c.is_moe()) throw Error("MoeFfn: the model has no experts");
  if (const std::string what = moe_unimplemented(c); !what.empty())
    throw Error(c.arch_name + ": the CPU's routed FFN does not implement " + what + " yet");
  // Which forms of the two grouped inputs the experts read (Activations in cpu/matmul.h).
  for (const MoeExperts& l : layers) {
    for (const auto* mats : {&l.gate, &l.up})
      for (const auto& m : *mats) in_needs_.add_reader(*m);
    for (const auto& m : l.down) act_needs_.add_reader(*m);
  }
  n_shared_ = c.n_expert_shared > 0 ? 1 : 0;
  routing_.n_expert = c.n_expert + n_shared_;
  routing_.k = c.n_expert_used + n_shared_;
  groups_.begin.reserve(static_cast<size_t>(routing_.n_expert + 1));
  groups_.cursor.reserve(static_cast<size_t>(routing_.n_expert));
  order_.resize(static_cast<size_t>(routing_.n_expert));
  size_for(max_rows);
  // Work-item storage at its largest, so forward() never allocates for it.
  size_t max_items = 0;
  for (const MoeExperts& l : layers) {
    size_t gu = 0, dn = 0;
    for (size_t e = 0; e < l.gate.size(); ++e) {
      const auto blocks = [](const Matrix& m) {
        const int64_t ch = expert_chunk_rows(m);
        return static_cast<size_t>((m.n_out() + ch - 1) / ch);
      };
      gu += blocks(*l.gate[e]) + blocks(*l.up[e]);
      dn += blocks(*l.down[e]);
    }
    max_items = std::max({max_items, gu, dn});
  }
  items_.reserve(max_items);
}

void MoeFfn::Needs::add_reader(const Matrix& m) {
  q8k |= m.wants_q8k();
  q8u |= m.wants_q8u();
  q80 |= m.wants_q8_0();
  q80u |= m.wants_q8_0u();
  f32 |= !m.wants_q8k() && !m.wants_q8_0();
}

void MoeFfn::size_for(int64_t max_rows) {
  if (max_rows <= max_rows_) return;
  max_rows_ = max_rows;
  const auto rows = static_cast<size_t>(max_rows * routing_.k);
  const int64_t d = c_.n_embd, f = c_.n_ff_exp;
  auto size = [&](Grouped& g, int64_t width, const Needs& n, bool f32, size_t n_rows) {
    g.width = width;
    if (n.q8k) {
      // A K-quant matrix's n_in is a multiple of 256, a Q8_0 one's of 32 (make_matrix checks it).
      g.q8k.resize(n_rows * static_cast<size_t>(width / quant::kQK_K));
      g.bs32.resize(g.q8k.size() * 8);
      if (n.q8u) g.q8u.resize(n_rows * static_cast<size_t>(width));
    }
    if (n.q80) {
      g.q80.resize(n_rows * static_cast<size_t>(width / quant::kQK8_0));
      if (n.q80u) g.q80u.resize(n_rows * static_cast<size_t>(width));
    }
    if (f32) g.f32.resize(n_rows * static_cast<size_t>(width));
  };
  size(in_, d, in_needs_, in_needs_.f32, rows);
  // The n input rows' quantized forms, made once per row and copied into the grouped rows (rounding
  // every grouped row instead would be k times the work).
  size(rows_, d, in_needs_, false, static_cast<size_t>(max_rows));
  size(act_, f, act_needs_, false, rows);  // its f32 rows are gate_
  gate_.resize(rows * static_cast<size_t>(f));
  up_.resize(rows * static_cast<size_t>(f));
  down_.resize(rows * static_cast<size_t>(d));
  routing_.expert.resize(rows);
  routing_.weight.resize(rows);
  routing_.probs.resize(static_cast<size_t>(max_rows * c_.n_expert));
  if (c_.expert_gating == model::ExpertGating::kSigmoid) biased_.resize(routing_.probs.size());
  groups_.src_row.reserve(rows);
  groups_.grouped.reserve(rows);
}

void MoeFfn::forward(const model::LayerWeights& lw, const MoeExperts& ex, const float* x, int64_t n,
                     float* out, int64_t ldo) {
  if (n <= 0 || n > max_rows_) {
    throw Error("MoeFfn: " + std::to_string(n) + " rows, expected 1.." + std::to_string(max_rows_));
  }
  // E routed experts (plus the shared one as expert E), k slots per row (plus its slot, last).
  const int64_t d = c_.n_embd, f = c_.n_ff_exp, E = c_.n_expert, k = routing_.k;
  const int64_t E_all = routing_.n_expert, k_routed = c_.n_expert_used;
  const int nt = n_threads_;
  PassClock clock(timing_, times_);
  if (timing_) times_.expert_macs += 3.0 * static_cast<double>(n * k) * static_cast<double>(d * f);

  // 1. Routing.
  routing_.n_rows = n;
  const float* router = lw.ffn_gate_inp.data();
  const bool sigmoid = c_.expert_gating == model::ExpertGating::kSigmoid;
  const float* bias = lw.exp_probs_b.empty() ? nullptr : lw.exp_probs_b.data();
  const float scale = c_.expert_weights_scale;
  moe_router_logits(*rk_, router, E, x, n, d, routing_.probs.data(), nt);  // the rows' logits, into probs
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t t = 0; t < n; ++t) {
    int32_t* ex_t = &routing_.expert[t * k];
    float* w_t = &routing_.weight[t * k];
    if (sigmoid) {
      moe_route_row_sigmoid(nullptr, E, x + t * d, d, bias, c_.n_expert_groups, c_.n_group_used, k_routed,
                            c_.expert_weights_norm, scale, &routing_.probs[t * E], &biased_[t * E], ex_t,
                            w_t);
    } else {
      moe_route_row(nullptr, E, x + t * d, d, k_routed, c_.expert_weights_norm, &routing_.probs[t * E], ex_t,
                    w_t);
      if (scale != 1.0f)
        for (int64_t j = 0; j < k_routed; ++j) w_t[j] *= scale;
    }
    if (n_shared_ > 0) {
      ex_t[k_routed] = static_cast<int32_t>(E);  // the shared expert, added last
      w_t[k_routed] = 1.0f;
    }
  }

  clock.mark(MoePass::kRoute);

  // 2. Grouping.
  moe_group(routing_, groups_);
  const int64_t n_slots = n * k;

  // 3. The grouped input rows: each input row rounded once, then copied to its k grouped rows.
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t t = 0; t < n; ++t) rows_.quantize(*rk_, x + t * d, t);
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n_slots; ++i) {
    const int64_t src = groups_.src_row[i];
    if (!in_.f32.empty()) std::memcpy(&in_.f32[i * d], x + src * d, static_cast<size_t>(d) * sizeof(float));
    in_.copy_row(rows_, src, i);
  }

  clock.mark(MoePass::kGather);

  // Experts in decreasing order of rows (ties by index), so the largest items are handed out first.
  std::iota(order_.begin(), order_.end(), 0);
  const auto rows_of = [&](int32_t e) { return groups_.begin[e + 1] - groups_.begin[e]; };
  if (timing_) {
    for (int64_t e = 0; e < E_all; ++e) {
      const int64_t r = rows_of(static_cast<int32_t>(e));
      int b = 0;
      while (r > MoeTimes::kExpertRowBuckets[b]) ++b;
      ++times_.expert_count[b];
      times_.expert_rows[b] += r;
    }
  }
  // Insertion sort: stable, no allocation (std::stable_sort may allocate), E <= 1024.
  for (size_t i = 1; i < order_.size(); ++i) {
    const int32_t e = order_[i];
    size_t j = i;
    for (; j > 0 && rows_of(order_[j - 1]) < rows_of(e); --j) order_[j] = order_[j - 1];
    order_[j] = e;
  }

  auto run_items = [&](float* const* outs, const int64_t* ldys, const Grouped& in, const float* in_f32) {
    const size_t n_items = items_.size();
    // Runs of 4 consecutive items (blocks of one expert) per grab, so a kernel's prefetch of the rows
    // after its block usually fetches its own next item. Not guided: the items come sorted by expert
    // size, so guided's first chunk (half the items) held about 65% of the down pass's work and the
    // other thread waited a quarter of that pass (profile_forward.py, LLaDA-MoE: down 531 -> 404 ms).
    double item_s[MoeTimes::kBuckets] = {}, item_macs[MoeTimes::kBuckets] = {};
#pragma omp parallel for schedule(dynamic, 4) num_threads(nt) reduction(+ : item_s[:MoeTimes::kBuckets], item_macs[:MoeTimes::kBuckets])
    for (size_t it = 0; it < n_items; ++it) {
      const WorkItem& item = items_[it];
      const int64_t b = groups_.begin[item.expert];
      const int64_t rows = groups_.begin[item.expert + 1] - b;
      const Activations a = in.view(in_f32, b, rows);
      const double t0 = timing_ ? wall_now() : 0;
      item.m->multiply(a, item.r0, item.r1, outs[item.which] + b * ldys[item.which], ldys[item.which]);
      if (timing_) {
        int k = 0;
        while (rows > MoeTimes::kExpertRowBuckets[k]) ++k;
        item_s[k] += wall_now() - t0;
        item_macs[k] += static_cast<double>(rows) * static_cast<double>(item.r1 - item.r0) *
                        static_cast<double>(item.m->n_in());
      }
    }
    for (int k = 0; k < MoeTimes::kBuckets; ++k) {
      times_.item_s[k] += item_s[k];
      times_.item_macs[k] += item_macs[k];
    }
  };
  auto add_items = [&](const std::vector<std::unique_ptr<Matrix>>& mats, int32_t which) {
    for (const int32_t e : order_) {
      if (rows_of(e) == 0) break;
      const Matrix& m = *mats[static_cast<size_t>(e)];
      const int64_t chunk = expert_chunk_rows(m);
      for (int64_t r0 = 0; r0 < m.n_out(); r0 += chunk)
        items_.push_back(WorkItem{&m, e, which, r0, std::min(r0 + chunk, m.n_out())});
    }
  };

  // 4. gate and up.
  items_.clear();
  add_items(ex.gate, 0);
  add_items(ex.up, 1);
  {
    float* outs[2] = {gate_.data(), up_.data()};
    const int64_t ldys[2] = {f, f};
    run_items(outs, ldys, in_, in_.f32.empty() ? nullptr : in_.f32.data());
  }

  clock.mark(MoePass::kGateUp);

  // 5. SwiGLU per grouped row, rounded for down.
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t i = 0; i < n_slots; ++i) {
    rk_->silu_mul(&gate_[i * f], &up_[i * f], &gate_[i * f], f);
    act_.quantize(*rk_, &gate_[i * f], i);
  }

  clock.mark(MoePass::kSiluMul);

  // 6. down.
  items_.clear();
  add_items(ex.down, 0);
  {
    float* outs[1] = {down_.data()};
    const int64_t ldys[1] = {d};
    run_items(outs, ldys, act_, gate_.data());
  }

  clock.mark(MoePass::kDown);

  // 7. The weighted sum, slot by slot as ggml adds the experts' views (products rounded, then added).
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * ldo;
    for (int64_t j = 0; j < k; ++j) {
      const float w = routing_.weight[t * k + j];
      const float* dr = &down_[static_cast<int64_t>(groups_.grouped[t * k + j]) * d];
      if (j == 0) {
        for (int64_t i = 0; i < d; ++i) o[i] = w * dr[i];
      } else {
        for (int64_t i = 0; i < d; ++i) o[i] += w * dr[i];
      }
    }
  }
  clock.mark(MoePass::kCombine);
}

}  // namespace dllm::cpu
