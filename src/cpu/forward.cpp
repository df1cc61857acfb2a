// The CPU's operations of model/device_ops.h, run by model::ForwardDriver (CpuForward puts the two
// together): embed, norm (+ quantize), projections, bias + Q/K norm + RoPE, masked attention over each
// segment's keys, the dense FFN, the routed FFN (cpu/moe.h), the LM head over the requested rows.
// (llama.cpp src/models/llada.cpp, dream.cpp, llada-moe.cpp and rnd1.cpp build the same graph.) Matrices
// with Q4_K / Q6_K weights read their input rounded to Q8_K, as ggml-cpu does (the vec_dot_type of those
// types in ggml-cpu.c); a ProjectionInput makes that rounding once per activation row, inside the pass
// that writes the row (add + RMSNorm + quantize, SiLU * up + quantize), and shares it among the matrices
// that read the same input (Q/K/V, gate/up).
//
// Shapes: `rows` are the activation rows of a pass (model::PassLayout: the rows of every segment); d =
// n_embd, n_q = n_head * hd, n_kv = n_head_kv * hd, n_ff; every activation is row-major, one row per
// token. A block's output stays in `proj` and the next pass that reads x adds it (x += proj
// "pending"), so the residual add costs no pass of its own.
//
// Threading: OpenMP, dynamic schedules. Matmuls are split into fixed output-row ranges (their size
// depends on the matrix only, never on the thread count) handed out `guided`: runs of consecutive
// ranges per thread, shrinking to single ones at the end, so a kernel's prefetch of the rows after
// its range usually fetches its own thread's next range. Attention is split into (segment, head)
// items, the row ops into tokens; each output element is computed by one thread in a fixed order, so
// the logits are bit-identical for any thread count.
#include "cpu/forward.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/forward_profile.h"
#include "cpu/geglu_moe.h"
#include "cpu/kernels/panel_gemm_kernels.h"
#include "cpu/kernels/row_kernels.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "cpu/panel_gemm.h"
#include "cpu/projection_input.h"
#include "model/driver.h"
#include "model/forward_plan.h"
#include "model/model.h"
#include "quant/quant.h"

namespace dllm::cpu {

namespace {

/// Floats of padding after each row of q, k and v: with rows of 4096 floats (16 KB) every key's
/// slice of a head falls in the same L1 sets, so attention's walks down K and V evicted themselves;
/// one line of padding spreads them over the sets.
constexpr int64_t kRowPad = 16;

/// Rows per matmul work item: a multiple of the kernel's granularity, about 64 items per matrix, and
/// a function of the matrix alone (so the split, and hence every output, is the same for any thread
/// count).
int64_t chunk_rows(const Matrix& m) {
  const int64_t g = std::max<int64_t>(1, m.row_granularity());
  const int64_t groups = std::max<int64_t>(1, m.n_out() / (g * 64));
  return g * groups;
}

/// One matrix of a projection: y[t * ldy + o] = (W x_t)[o].
struct ProjectionOut {
  const Matrix* m = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};

}  // namespace

/// The operations (model::DeviceOps) over this CPU's kernels, the plan they run and the driver that
/// runs them.
struct CpuForward::Impl final : model::DeviceOps {
  const model::Model& model;
  const model::ForwardPlan plan;
  const model::ModelConfig& c;                      ///< plan.config()
  const std::vector<model::RopeTable> rope_tables;  ///< plan.make_rope_tables()
  int n_threads = 1;
  Isa isa = Isa::kScalar;
  const RowKernels* rk = nullptr;  ///< quantization, SiLU, RMSNorm and attention kernels of `isa`

  struct LayerMatrices {
    std::unique_ptr<Matrix> q, k, v, o, gate, up, down;
  };
  std::vector<LayerMatrices> layers;  ///< gate / up / down null in a kMoe layer; v null when K is V
  std::vector<MoeExperts> experts;    ///< per layer, empty in a kDense layer
  std::unique_ptr<MoeFfn> moe;        ///< the routed FFN and its scratch, when a layer is kMoe
  // Gemma-4 (LayerDesc::gemma, FfnKind::kGegluDenseMoe).
  std::vector<GegluExperts> geglu_experts;  ///< per layer, empty in the other layers
  std::unique_ptr<GegluMoe> geglu_moe;
  std::unique_ptr<Matrix> sc_gate, sc_up, sc_down;  ///< DiffusionGemma's self-conditioning MLP
  std::vector<float> sc_probs;   ///< self-conditioning rows x n_vocab: the f16-rounded probabilities
  std::vector<uint8_t> sc_used;  ///< per id: some row's probability is not 0
  std::vector<int32_t> sc_ids;   ///< the ids of sc_used, increasing
  std::vector<float> ones;       ///< RMSNorm without a weight: max(d, head_dim) ones
  /// Wo's input per distinct attention width (n_head x the layer's head_dim): attn_in_of[il].
  std::vector<ProjectionInput> attn_ins;
  std::vector<size_t> attn_in_of;
  std::vector<std::vector<const Matrix*>> attn_in_users;
  std::vector<int64_t> attn_in_width;
  std::vector<float> dense;    ///< Gemma: the dense MLP's post-normed output, d
  std::vector<float> moe_out;  ///< Gemma: the experts' sum, d
  /// The layer whose output `proj` holds while pending: its output scalars apply when it is added
  /// (Gemma), -1 for none.
  int64_t pending_layer = -1;
  std::unique_ptr<Matrix> output;
  bool tied_head = false;  ///< output is token_embd (no output.weight in the file)
  /// The matrices reading each projection input (they decide its quantized forms).
  std::vector<const Matrix*> normed_users, o_users, down_users;

  // Activations, rows_cap rows each (grown by reserve()).
  int64_t rows_cap = 0;            ///< activation rows the buffers hold now
  int64_t keys_cap = 0;            ///< keys the attention scratch holds now
  int64_t q_ld = 0, kv_ld = 0;     ///< row strides of q and of k, v (kRowPad floats after each row)
  std::vector<float> x;            ///< residual stream, d
  std::vector<float> proj;         ///< the last block's output (Wo or Wdown), d
  bool pending = false;            ///< x += proj is still to be done (by the next pass that reads x)
  std::vector<float> q, k, v;      ///< q_ld, kv_ld, kv_ld
  std::vector<float> up;           ///< h Wup, n_ff
  ProjectionInput normed;          ///< RMSNorm(x) * w, d: the input of q/k/v, gate/up and the LM head
  ProjectionInput attn_out;        ///< attention output, n_q: the input of Wo
  ProjectionInput ffn_act;         ///< h Wgate, then silu(h Wgate) * up in place, n_ff: the input of Wdown
  std::vector<float> att_scratch;  ///< n_threads x att_scratch_stride: attention_head's scratch
  size_t att_scratch_stride = 0;
  Profile prof;

  model::ForwardDriver driver;

  ~Impl() override {
    prof.print();
    if (moe) moe->print_times(prof.forwards);
  }

  /// Throws what ForwardPlan, choose_isa and make_matrix throw.
  Impl(const model::Model& m, const ForwardOptions& opt)
      : model(m),
        plan(m, opt.max_tokens, opt.max_batch, opt.rope_mode),
        c(plan.config()),
        rope_tables(plan.make_rope_tables()),
        driver(plan, *this) {
    n_threads = opt.n_threads > 0 ? opt.n_threads : physical_core_count();
    isa = opt.isa ? *opt.isa : choose_isa("");
    rk = &row_kernels(isa);
    make_matrices();
    const model::ActivationWidths& w = plan.widths();
    q_ld = w.q + kRowPad;
    kv_ld = w.kv + kRowPad;
    for (size_t il = 0; il < layers.size(); ++il) {
      const LayerMatrices& lm = layers[il];
      normed_users.insert(normed_users.end(), {lm.q.get(), lm.k.get()});
      if (lm.v) normed_users.push_back(lm.v.get());
      // Wo's input: one per width (Gemma-4's layers have two head sizes).
      const int64_t width = lm.o->n_in();
      size_t w = 0;
      while (w < attn_in_width.size() && attn_in_width[w] != width) ++w;
      if (w == attn_in_width.size()) {
        attn_in_width.push_back(width);
        attn_in_users.emplace_back();
      }
      attn_in_users[w].push_back(lm.o.get());
      attn_in_of.push_back(w);
      o_users.push_back(lm.o.get());
      if (lm.down) {
        normed_users.insert(normed_users.end(), {lm.gate.get(), lm.up.get()});
        down_users.push_back(lm.down.get());
      }
    }
    normed_users.push_back(output.get());
    if (sc_gate) {
      normed_users.insert(normed_users.end(), {sc_gate.get(), sc_up.get()});
      down_users.push_back(sc_down.get());
    }
    ones.assign(static_cast<size_t>(std::max(c.n_embd, plan.max_head_dim())), 1.0f);
    bool geglu = false;
    for (size_t il = 0; il < plan.n_layer(); ++il)
      geglu |= plan.layer(il).ffn == model::FfnKind::kGegluDenseMoe;
    if (geglu) geglu_moe = std::make_unique<GegluMoe>(c, geglu_experts, isa, n_threads);
    bool routed = false;
    for (size_t il = 0; il < plan.n_layer(); ++il) routed |= plan.layer(il).ffn == model::FfnKind::kMoe;
    if (routed) {
      moe = std::make_unique<MoeFfn>(c, experts, 0, isa, n_threads);
      moe->set_timing(prof.on);  // its passes under $DLLM_PROFILE, printed after the phase table
    }
  }

  /// Every weight matrix prepared for `isa`. A matrix that copied / repacked its weights no longer
  /// reads the mapping: those pages go back, so the model is resident once (a later read, the tied
  /// embedding lookup, faults them in again from the file).
  void make_matrices() {
    auto make = [&](const gguf::TensorInfo* t) {
      std::unique_ptr<Matrix> mat = make_matrix(*t, model.data(*t), isa);
      if (mat->owns_data()) model.file().release_pages(*t);
      return mat;
    };
    for (size_t il = 0; il < plan.n_layer(); ++il) {
      const model::LayerWeights& lw = model.layers()[il];
      LayerMatrices lm;
      lm.q = make(lw.attn_q);
      lm.k = make(lw.attn_k);
      if (lw.attn_v) lm.v = make(lw.attn_v);
      lm.o = make(lw.attn_output);
      geglu_experts.emplace_back();
      switch (plan.layer(il).ffn) {
        case model::FfnKind::kDense:
          lm.gate = make(lw.ffn_gate);
          lm.up = make(lw.ffn_up);
          lm.down = make(lw.ffn_down);
          experts.emplace_back();
          break;
        case model::FfnKind::kMoe:
          experts.push_back(make_moe_experts(model, lw, isa, expert_layout(c)));
          break;
        case model::FfnKind::kGegluDenseMoe:
          lm.gate = make(lw.ffn_gate);
          lm.up = make(lw.ffn_up);
          lm.down = make(lw.ffn_down);
          experts.emplace_back();
          geglu_experts.back() = make_geglu_experts(model, lw, isa, expert_layout(c));
          break;
      }
      layers.push_back(std::move(lm));
    }
    output = make(&model.output());
    tied_head = &model.output() == &model.token_embd();
    if (c.self_conditioning) {
      sc_gate = make(model.self_cond().gate);
      sc_up = make(model.self_cond().up);
      sc_down = make(model.self_cond().down);
    }
  }

  // ---- model::DeviceOps ----

  forward::Capabilities capabilities() const override {
    forward::Capabilities caps;
    caps.kv_state = true;
    caps.masks = true;
    caps.max_rows = plan.max_rows();
    caps.max_segments = plan.max_rows();  // any number: each has at least one row
    return caps;
  }
  int64_t n_vocab() const override { return output->n_out(); }
  const void* kv_owner() const override { return this; }

  /// The activation buffers for p.n_rows rows (at least doubling when they grow, up to
  /// plan.max_rows(), so a server's passes of growing size reallocate a few times only) and the
  /// attention scratch for p.max_keys keys. A fresh buffer is zero-filled, so its pages are touched
  /// here, not inside a timed block.
  void reserve(const model::PassLayout& p) override {
    if (p.n_rows > rows_cap) {
      const int64_t rows = std::min(plan.max_rows(), std::max(p.n_rows, 2 * rows_cap));
      const model::ActivationWidths& w = plan.widths();
      const auto n = static_cast<size_t>(rows);
      x = std::vector<float>(n * w.embd);
      proj = std::vector<float>(n * w.embd);
      q = std::vector<float>(n * q_ld);
      k = std::vector<float>(n * kv_ld);
      v = std::vector<float>(n * kv_ld);
      normed = ProjectionInput(rows, w.embd, normed_users);
      if (attn_in_width.size() == 1) {
        attn_out = ProjectionInput(rows, w.q, o_users);
      } else {
        attn_ins.clear();
        for (size_t i = 0; i < attn_in_width.size(); ++i)
          attn_ins.emplace_back(rows, attn_in_width[i], attn_in_users[i]);
      }
      if (!down_users.empty()) {
        up = std::vector<float>(n * w.ff);
        ffn_act = ProjectionInput(rows, w.ff, down_users);
      }
      if (moe) moe->size_for(rows);
      if (geglu_moe) {
        geglu_moe->size_for(rows);
        dense = std::vector<float>(n * w.embd);
        moe_out = std::vector<float>(n * w.embd);
      }
      rows_cap = rows;
    }
    if (p.max_keys > keys_cap) {
      att_scratch_stride = attention_scratch_floats(plan.max_head_dim(), p.max_keys);
      att_scratch = std::vector<float>(static_cast<size_t>(n_threads) * att_scratch_stride);
      keys_cap = p.max_keys;
    }
  }

  /// Makes `kv`'s storage on first use and grows it to `rows` positions per layer (at least
  /// doubling, and at least kv.expected_rows(): a canvas whose size is known is made room for
  /// once, not regrown and copied mid-run), keeping the rows it holds.
  void reserve_kv(forward::KvState& kv, int64_t rows) override {
    if (kv.storage() == nullptr) {
      auto s = std::make_unique<KvStorage>();
      s->owner_ = this;
      s->width = plan.widths().kv;
      s->k.resize(plan.n_layer());
      s->v.resize(plan.n_layer());
      kv.set_storage(std::move(s));
    }
    auto& s = static_cast<KvStorage&>(*kv.storage());
    if (rows <= s.capacity) return;
    const int64_t cap = std::max({rows, 2 * s.capacity, kv.expected_rows()});
    const auto keep = static_cast<size_t>(std::min(kv.rows(), s.capacity) * s.width);
    for (size_t il = 0; il < plan.n_layer(); ++il) {
      for (std::vector<float>* t : {&s.k[il], &s.v[il]}) {
        std::vector<float> grown(static_cast<size_t>(cap * s.width), 0.0f);
        std::copy_n(t->begin(), keep, grown.begin());
        *t = std::move(grown);
      }
    }
    s.capacity = cap;
  }

  /// Each out.y = W x over the n rows of `in` (every matrix's full output range), all N matrices'
  /// work items in one parallel loop.
  template <size_t N>
  void project_rows(Phase phase, const ProjectionInput& in, int64_t n, const ProjectionOut (&out)[N]) {
    const Profile::Scope ps(prof, phase);
    const Activations x_in = in.view(n);
    std::array<int64_t, N + 1> first{};  // first work item of each matrix
    std::array<int64_t, N> chunk{};
    for (size_t j = 0; j < N; ++j) {
      chunk[j] = chunk_rows(*out[j].m);
      first[j + 1] = first[j] + (out[j].m->n_out() + chunk[j] - 1) / chunk[j];
    }
    const int64_t n_items = first[N];
    // Dynamic, one item at a time: the matrices' items differ in cost (Q's rows per item are 2-4x
    // K's and V's under GQA), and guided scheduling handed one thread most of Q in its first chunk.
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      size_t j = 0;
      while (item >= first[j + 1]) ++j;
      const int64_t begin = (item - first[j]) * chunk[j];
      const int64_t end = std::min(begin + chunk[j], out[j].m->n_out());
      out[j].m->multiply(x_in, begin, end, out[j].y, out[j].ldy);
    }
  }

  /// x = token_embd[tokens], one row per activation row.                               rows x d
  void embed(const model::PassLayout& p) override {
    const bool timed = prof.begin_pass(p.n_rows);
    if (moe && prof.on) moe->resume_timing(timed);
    const int64_t d = c.n_embd;
    {
      const Profile::Scope ps(prof, Phase::kEmbed);
      const float scale = c.embd_scale;
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < p.n_rows; ++r) {
        float* xr = &x[r * d];
        // A tied LM head's packed rows where its layout decodes (the same bits): a lookup in the
        // mapping faults in whole page-cache folios (about 1 MB a row here), which adds up to most of
        // token_embd over a few random canvases.
        if (!tied_head || !output->decode_row(p.tokens[r], xr))
          model.dequantize_row(model.token_embd(), p.tokens[r], xr);
        if (scale != 1.0f)
          for (int64_t i = 0; i < d; ++i) xr[i] *= scale;
      }
    }
    pending = false;
    pending_layer = -1;
    if (!c.canvas_input_norm) return;
    self_condition(p);
    // DiffusionGemma: canvas rows enter the layers RMS-normed without a weight (diffusion-gemma.cpp
    // 437-444), prompt rows as they are.
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < p.n_rows; ++r)
      if (!forward::causal_row(p.segs[p.row_seg[r]].mask, p.positions[r]))
        rk->rmsnorm(&x[r * d], ones.data(), &x[r * d], d, c.rms_eps);
  }

  /// DiffusionGemma's self-conditioning (diffusion-gemma.cpp 386-421), for the canvas rows of the
  /// segments that carry the previous step's logits: probs = softmax(prev * self_cond_scale) rounded to
  /// f16, soft = probs @ token_embd (f16) * sqrt(n_embd), n = RMSNorm(soft) * self_cond_pre_norm,
  /// x += down(gelu(gate n) * up n). Uses normed, ffn_act, up and proj as scratch (nothing is pending).
  void self_condition(const model::PassLayout& p) {
    std::vector<int64_t> rows;       // activation rows that get the input
    std::vector<const float*> prev;  // their previous logits
    std::vector<float> scale;
    const int64_t d = c.n_embd, V = c.n_vocab;
    for (const model::PassSegment& sg : p.segs) {
      if (sg.self_cond.empty()) continue;
      int64_t j = 0;
      for (int64_t t = 0; t < sg.n_rows; ++t) {
        if (forward::causal_row(sg.mask, sg.first + t)) continue;
        rows.push_back(sg.row0 + t);
        prev.push_back(sg.self_cond.data() + j++ * V);
        scale.push_back(sg.self_cond_scale);
      }
    }
    const auto m = static_cast<int64_t>(rows.size());
    if (m == 0) return;
    std::optional<Profile::Scope> ps(std::in_place, prof, Phase::kSelfCondProbs);
    // probs = softmax(prev * scale) (ggml_soft_max_f32: max-subtracted exp, the sum in double, times
    // 1 / sum), rounded to f16 as ggml-cpu rounds the F16 matmul's other operand.
    sc_probs.resize(static_cast<size_t>(m * V));
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t i = 0; i < m; ++i) rk->softmax_f16(prev[i], scale[i], &sc_probs[i * V], V);
    // Ids whose probability rounds to 0 in every row add nothing (a trained model's softmax leaves
    // most of a 262144-token vocabulary below f16's smallest value): skipped. Each thread scans its
    // own range of ids row after row (memory order).
    sc_used.assign(static_cast<size_t>(V), 0);
    constexpr int64_t kIdsPerItem = 4096;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t v0 = 0; v0 < V; v0 += kIdsPerItem) {
      const int64_t v1 = std::min(V, v0 + kIdsPerItem);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t v = v0; v < v1; ++v) sc_used[v] |= sc_probs[i * V + v] != 0.0f;
    }
    sc_ids.clear();
    for (int64_t v = 0; v < V; ++v)
      if (sc_used[v]) sc_ids.push_back(static_cast<int32_t>(v));
    // soft = probs @ token_embd: token_embd's rows decoded a panel at a time and rounded to f16 (the
    // PR's F16 copy, sc_embT, diffusion-gemma.cpp 693-753), every id in increasing order.
    ps.emplace(prof, Phase::kSelfCondGemm);
    for (int64_t i = 0; i < m; ++i) std::fill_n(normed.row(i), d, 0.0f);
    const gguf::TensorInfo& e = model.token_embd();
    auto b_row = [&](int64_t id, int64_t j0, int64_t j1, float* dst) {
      // The tied LM head's packed rows where its layout decodes (token_embd's mapped pages then stay
      // released); else the file's super-blocks over [j0, j1), Q6_K (Q4_K_M files) by the row
      // kernels' decoder.
      if (tied_head && output->decode_row(id, j0, j1, dst)) return;
      thread_local std::vector<float> blocks;
      if (e.type != gguf::GgmlType::Q6_K) {
        blocks.resize(static_cast<size_t>(d));
        model.dequantize_row(e, id, blocks.data());
        std::copy(blocks.begin() + j0, blocks.begin() + j1, dst);
        return;
      }
      const int64_t sb0 = j0 / quant::kQK_K, sb1 = (j1 + quant::kQK_K - 1) / quant::kQK_K;
      blocks.resize(static_cast<size_t>((sb1 - sb0) * quant::kQK_K));
      const auto* row = reinterpret_cast<const quant::block_q6_K*>(model.data(e) +
                                                                   static_cast<uint64_t>(id) * e.row_bytes());
      rk->dequantize_q6_K(row + sb0, blocks.data(), (sb1 - sb0) * quant::kQK_K);
      std::copy_n(blocks.begin() + (j0 - sb0 * quant::kQK_K), j1 - j0, dst);
    };
    const PanelGemm g{.a = sc_probs.data(),
                      .lda = V,
                      .m = m,
                      .ids = sc_ids.data(),
                      .k = static_cast<int64_t>(sc_ids.size()),
                      .n = d,
                      .b_row = b_row,
                      .c = normed.row(0),
                      .ldc = d};
    panel_gemm(panel_gemm_isa(isa), g, n_threads);
    ps.reset();  // the MLP below times itself (gemm gate/up, gemm down)
    const std::vector<float>& pre_norm = model.self_cond().pre_norm;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t i = 0; i < m; ++i) {
      float* soft = normed.row(i);
      for (int64_t k = 0; k < d; ++k) soft[k] *= c.embd_scale;
      rk->rmsnorm(soft, pre_norm.data(), soft, d, c.rms_eps);
      normed.prepare_row(*rk, i);
    }
    const int64_t n_ff = c.n_ff;
    project_rows(Phase::kGemmGateUp, normed, m,
                 {{sc_gate.get(), ffn_act.row(0), n_ff}, {sc_up.get(), up.data(), n_ff}});
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t i = 0; i < m; ++i) {
      rk->gelu_mul(ffn_act.row(i), &up[i * n_ff], ffn_act.row(i), n_ff);
      ffn_act.prepare_row(*rk, i);
    }
    project_rows(Phase::kGemmDown, ffn_act, m, {{sc_down.get(), proj.data(), d}});
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t i = 0; i < m; ++i) add_inplace(&x[rows[i] * d], &proj[i * d], d);
  }

  /// Gemma-4's output scalar of layer il for activation row r: enc_layer_output_scale on
  /// DiffusionGemma's causal (prompt) rows, layer_output_scale on the others (diffusion-gemma.cpp
  /// 570-583); gemma4 has only the latter.
  float output_scale(const model::PassLayout& p, size_t il, int64_t r) const {
    const model::LayerWeights& lw = model.layers()[il];
    if (!lw.enc_layer_output_scale.empty() && forward::causal_row(p.segs[p.row_seg[r]].mask, p.positions[r]))
      return lw.enc_layer_output_scale[0];
    return lw.layer_output_scale[0];
  }

  /// Row r of x after the pending block output is added (Gemma: then times the layer's output scalar),
  /// written to dst (may be &x[r * d]).
  void add_pending(const model::PassLayout& p, int64_t r, float* dst) const {
    const int64_t d = c.n_embd;
    if (dst != &x[r * d]) std::copy_n(&x[r * d], d, dst);
    if (!pending) return;
    add_inplace(dst, &proj[r * d], d);
    if (pending_layer >= 0 && plan.layer(static_cast<size_t>(pending_layer)).gemma) {
      const float s = output_scale(p, static_cast<size_t>(pending_layer), r);
      for (int64_t i = 0; i < d; ++i) dst[i] *= s;
    }
  }

  /// Wo's input of layer il.
  ProjectionInput& attn_input(size_t il) {
    return attn_ins.empty() ? attn_out : attn_ins[attn_in_of[il]];
  }

  /// x += proj when a block's output is pending, then normed = RMSNorm(x) * w, quantized for its
  /// matrices in the same pass (the row is still in L1/L2) unless the layer's FFN is routed (the
  /// routed FFN rounds its input itself, for its experts' types).                     rows x d
  void norm(const model::PassLayout& p, size_t il, model::NormSite site) override {
    const Profile::Scope ps(prof, Phase::kNorm);
    const model::LayerWeights& lw = model.layers()[il];
    const std::vector<float>& w = site == model::NormSite::kAttention ? lw.attn_norm : lw.ffn_norm;
    const model::LayerDesc& desc = plan.layer(il);
    const bool quantize = site == model::NormSite::kAttention || desc.ffn != model::FfnKind::kMoe;
    const int64_t d = c.n_embd, n = p.n_rows;
    // Gemma-4: the attention output is RMS-normed * post_attention_norm before its residual add.
    const bool post_norm = desc.gemma && site == model::NormSite::kFfn;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < n; ++r) {
      if (post_norm) {
        rk->rmsnorm(&proj[r * d], lw.post_attention_norm.data(), &proj[r * d], d, c.rms_eps);
        add_inplace(&x[r * d], &proj[r * d], d);
      } else {
        add_pending(p, r, &x[r * d]);
      }
      rk->rmsnorm(&x[r * d], w.data(), normed.row(r), d, c.rms_eps);
      if (quantize) normed.prepare_row(*rk, r);
    }
    pending = false;
    pending_layer = -1;
  }

  /// kQkv: q = h Wq (rows x n_q), k = h Wk, v = h Wv (rows x n_kv). kO: the attention output
  /// rounded for Wo, then proj = attn_out Wo (rows x d), left pending.
  void project(const model::PassLayout& p, size_t il, model::Projection which) override {
    const LayerMatrices& lm = layers[il];
    const int64_t n = p.n_rows;
    if (which == model::Projection::kQkv) {
      if (lm.v) {
        project_rows(
            Phase::kGemmQkv, normed, n,
            {{lm.q.get(), q.data(), q_ld}, {lm.k.get(), k.data(), kv_ld}, {lm.v.get(), v.data(), kv_ld}});
      } else {  // Gemma-4 without attn_v: V is the K projection (qk_norm_rope copies it)
        project_rows(Phase::kGemmQkv, normed, n,
                     {{lm.q.get(), q.data(), q_ld}, {lm.k.get(), k.data(), kv_ld}});
      }
      return;
    }
    ProjectionInput& in = attn_input(il);
    {
      const Profile::Scope ps(prof, Phase::kQuantize);
      in.prepare(*rk, n, n_threads);
    }
    project_rows(Phase::kGemmO, in, n, {{lm.o.get(), proj.data(), c.n_embd}});
    pending = true;
    pending_layer = static_cast<int64_t>(il);
  }

  /// Per activation row: q, k, v += their biases (qkv_bias), the per-head RMSNorm of q and k
  /// (qk_norm), then RoPE on the first n_rot dims of every head of q and k with the angles of the
  /// row's position.
  void qk_norm_rope(const model::PassLayout& p, size_t il) override {
    const Profile::Scope ps(prof, Phase::kBiasRope);
    const model::LayerDesc& desc = plan.layer(il);
    const model::LayerWeights& lw = model.layers()[il];
    const model::RopeTable& angles = rope_tables[plan.rope_table_of(il)];
    const int64_t hd = desc.head_dim, n_q = c.n_head * hd, n_kv = desc.n_head_kv * hd;
    const bool v_from_k = layers[il].v == nullptr;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < p.n_rows; ++r) {
      const int64_t pos = p.positions[r];
      float* qt = &q[r * q_ld];
      float* kt = &k[r * kv_ld];
      if (desc.gemma) {
        // V = RMSNorm per head without a weight, of h Wv or (no attn_v) of h Wk before its norm and
        // RoPE (gemma4-common.h 46-63).
        float* vt = &v[r * kv_ld];
        if (v_from_k) std::copy_n(kt, n_kv, vt);
        for (int64_t h = 0; h < desc.n_head_kv; ++h)
          rk->rmsnorm(vt + h * hd, ones.data(), vt + h * hd, hd, c.rms_eps);
      }
      if (desc.qkv_bias) {
        add_inplace(qt, lw.attn_q_bias.data(), n_q);
        add_inplace(kt, lw.attn_k_bias.data(), n_kv);
        add_inplace(&v[r * kv_ld], lw.attn_v_bias.data(), n_kv);
      }
      if (desc.qk_norm) {
        // RMSNorm over each head's hd values, weights of hd, before RoPE (llama.cpp
        // src/models/llada-moe.cpp, rnd1.cpp: build_norm(Qcur, attn_q_norm, LLM_FFN_RMS) on the
        // [head_dim, n_head, n_tokens] view).
        for (int64_t h = 0; h < c.n_head; ++h)
          rk->rmsnorm(qt + h * hd, lw.attn_q_norm.data(), qt + h * hd, hd, c.rms_eps);
        for (int64_t h = 0; h < desc.n_head_kv; ++h)
          rk->rmsnorm(kt + h * hd, lw.attn_k_norm.data(), kt + h * hd, hd, c.rms_eps);
      }
      rope(qt, c.n_head, hd, angles.cos(pos), angles.sin(pos), desc.rope_mode, desc.n_rot);
      rope(kt, desc.n_head_kv, hd, angles.cos(pos), angles.sin(pos), desc.rope_mode, desc.n_rot);
    }
  }

  /// The fresh K/V of segment sg's rows into layer il of its state, at their positions (a refresh
  /// writes every position, Fast-dLLM's window step its window: replace_position; the others stay as
  /// they were).                                                             rows x n_kv, each
  void store_kv(size_t il, const model::PassSegment& sg) {
    const Profile::Scope ps(prof, Phase::kKvCache);
    auto& s = static_cast<KvStorage&>(*sg.kv->storage());
    const int64_t n_kv = s.width;
    const size_t at = static_cast<size_t>(sg.first * n_kv);
    for (int64_t r = 0; r < sg.n_rows; ++r) {
      std::copy_n(&k[(sg.row0 + r) * kv_ld], n_kv, s.k[il].data() + at + r * n_kv);
      std::copy_n(&v[(sg.row0 + r) * kv_ld], n_kv, s.v[il].data() + at + r * n_kv);
    }
  }

  /// attn_out = softmax(q k^T / sqrt(hd)) v per (segment, query head), GQA (query head h reads kv
  /// head h / (n_head / n_head_kv)), each row over the keys of its mask range among its segment's
  /// keys: its state's rows (after this pass's rows are stored), or its own rows.       rows x n_q
  void attention(const model::PassLayout& p, size_t il) override {
    for (const model::PassSegment& sg : p.segs)
      if (sg.kv != nullptr) store_kv(il, sg);
    const Profile::Scope ps(prof, Phase::kAttention);
    const int64_t window = plan.layer(il).window;
    // Work items: the query heads of one (segment, K/V head) read the same keys, so an item runs
    // several of them and the kernel lays the keys out once (AttentionHead::keys_in_scratch). A
    // group is cut into as many items as it takes to give every thread one, at most one per head.
    const int64_t n_kv_head = plan.layer(il).n_head_kv, group = c.n_head / n_kv_head;
    const auto n_groups = static_cast<int64_t>(p.segs.size()) * n_kv_head;
    const int64_t parts = std::clamp<int64_t>(n_threads / n_groups, 1, group);
    const int64_t per_item = (group + parts - 1) / parts, items_per_group = (group + per_item - 1) / per_item;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
    for (int64_t item = 0; item < n_groups * items_per_group; ++item) {
      const int64_t grp = item / items_per_group, part = item % items_per_group;
      const size_t seg = static_cast<size_t>(grp / n_kv_head);
      const int64_t h0 = grp % n_kv_head * group + part * per_item;
      const int64_t h1 = std::min(h0 + per_item, (grp % n_kv_head + 1) * group);
      for (int64_t h = h0; h < h1; ++h) {
        AttentionHead a = attention_head(il, p.segs[seg], h);
        a.ranges = p.key_ranges(window, seg);
        a.scratch = att_scratch.data() + static_cast<size_t>(omp_get_thread_num()) * att_scratch_stride;
        a.keys_in_scratch = h > h0;
        rk->attention_head(a);
      }
    }
  }

  /// One work item of attention(): every row of segment sg, head h, against its keys. A segment
  /// whose rows are all its keys (no state, or a refresh of every row) reads them from k / v.
  AttentionHead attention_head(size_t il, const model::PassSegment& sg, int64_t h) {
    const model::LayerDesc& desc = plan.layer(il);
    const int64_t hd = desc.head_dim, kvh = h / (c.n_head / desc.n_head_kv);
    AttentionHead a;
    a.q = &q[sg.row0 * q_ld + h * hd];
    a.q_stride = q_ld;
    a.n_q = sg.n_rows;
    if (sg.kv != nullptr && !(sg.first == 0 && sg.n_rows == sg.n_keys)) {
      const auto& s = static_cast<const KvStorage&>(*sg.kv->storage());
      a.k = s.k[il].data() + kvh * hd;
      a.v = s.v[il].data() + kvh * hd;
      a.kv_stride = s.width;
    } else {
      a.k = &k[sg.row0 * kv_ld + kvh * hd];
      a.v = &v[sg.row0 * kv_ld + kvh * hd];
      a.kv_stride = kv_ld;
    }
    a.n_kv = sg.n_keys;
    a.head_dim = hd;
    a.scale = desc.attn_scale != 0.0f ? desc.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));
    ProjectionInput& in = attn_input(il);
    a.out = in.row(sg.row0) + h * hd;
    a.out_stride = in.n_in();
    return a;
  }

  /// proj = (silu(h Wgate) * (h Wup)) Wdown with h the normed rows, left pending (FfnKind::kDense).
  void ffn(const model::PassLayout& p, size_t il) override {
    const LayerMatrices& lm = layers[il];
    const int64_t n = p.n_rows, n_ff = c.n_ff;
    // ffn_act = h Wgate, up = h Wup: rows x n_ff
    project_rows(Phase::kGemmGateUp, normed, n,
                 {{lm.gate.get(), ffn_act.row(0), n_ff}, {lm.up.get(), up.data(), n_ff}});
    const bool gemma = plan.layer(il).ffn == model::FfnKind::kGegluDenseMoe;
    {
      // ffn_act = silu(ffn_act) * up (Gemma: gelu), and its rounding for Wdown, in one pass per row.
      const Profile::Scope ps(prof, Phase::kSiluMul);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < n; ++r) {
        if (gemma)
          rk->gelu_mul(ffn_act.row(r), &up[r * n_ff], ffn_act.row(r), n_ff);
        else
          rk->silu_mul(ffn_act.row(r), &up[r * n_ff], ffn_act.row(r), n_ff);
        ffn_act.prepare_row(*rk, r);
      }
    }
    if (gemma) {
      // The dense MLP's output, RMS-normed * post_ffw_norm_1, waits in `dense` for moe_ffn.
      const std::vector<float>& w = model.layers()[il].post_ffw_norm_1;
      project_rows(Phase::kGemmDown, ffn_act, n, {{lm.down.get(), dense.data(), c.n_embd}});
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < n; ++r)
        rk->rmsnorm(&dense[r * c.n_embd], w.data(), &dense[r * c.n_embd], c.n_embd, c.rms_eps);
      return;
    }
    project_rows(Phase::kGemmDown, ffn_act, n, {{lm.down.get(), proj.data(), c.n_embd}});  // rows x d
    pending = true;
    pending_layer = static_cast<int64_t>(il);
  }

  /// proj = MoE(h) with h the normed f32 rows (FfnKind::kMoe, cpu/moe.h: route, expert-grouped
  /// GEMMs, weighted sum), left pending.
  void moe_ffn(const model::PassLayout& p, size_t il) override {
    const Profile::Scope ps(prof, Phase::kMoeFfn);
    const model::LayerWeights& lw = model.layers()[il];
    pending = true;
    pending_layer = static_cast<int64_t>(il);
    if (plan.layer(il).ffn == model::FfnKind::kGegluDenseMoe) {
      // Gemma-4: the experts on the residual stream x (= a), then proj = RMSNorm(dense +
      // RMSNorm(moe) * post_ffw_norm_2) * post_ffw_norm (gemma4-common.h 104-124).
      const int64_t d = c.n_embd;
      geglu_moe->forward(lw, geglu_experts[il], x.data(), p.n_rows, moe_out.data());
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < p.n_rows; ++r) {
        float* o = &moe_out[r * d];
        rk->rmsnorm(o, lw.post_ffw_norm_2.data(), o, d, c.rms_eps);
        add_inplace(o, &dense[r * d], d);
        rk->rmsnorm(o, lw.post_ffw_norm.data(), &proj[r * d], d, c.rms_eps);
      }
      return;
    }
    // Every segment's rows at once: routing is per row.
    moe->forward(lw, experts[il], normed.row(0), p.n_rows, proj.data(), c.n_embd);
  }

  /// logits = (RMSNorm(x + proj) * output_norm) Woutput for the requested rows of every segment (into
  /// each segment's logits: logit_rows.size() rows of n_vocab). The last block's pending add is made
  /// for those rows only, into normed (x is not written). With several segments the matrix runs over
  /// each segment's rows apart (into its own output), one output-row range of the weights at a time
  /// for all of them.
  void lm_head(const model::PassLayout& p) override {
    const int64_t n_head_rows = p.n_head_rows, d = c.n_embd;
    if (n_head_rows == 0) return;
    {
      const Profile::Scope ps(prof, Phase::kNorm);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t j = 0; j < n_head_rows; ++j) {
        const int64_t r = p.head_rows[j];
        float* h = normed.row(j);
        add_pending(p, r, h);
        rk->rmsnorm(h, model.output_norm().data(), h, d, c.rms_eps);
        normed.prepare_row(*rk, j);
      }
    }
    if (p.segs.size() == 1) {
      project_rows(Phase::kLmHead, normed, n_head_rows, {{output.get(), p.segs[0].logits, output->n_out()}});
      softcap(p);
      return;
    }
    const Profile::Scope ps(prof, Phase::kLmHead);
    const int64_t chunk = chunk_rows(*output), n_out = output->n_out();
    const int64_t n_items = (n_out + chunk - 1) / chunk;
#pragma omp parallel for schedule(guided) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      const int64_t begin = item * chunk, end = std::min(begin + chunk, n_out);
      for (const model::PassSegment& sg : p.segs) {
        const auto n = static_cast<int64_t>(sg.logit_rows.size());
        if (n > 0) output->multiply(normed.view(sg.head_row0, n), begin, end, sg.logits, n_out);
      }
    }
    softcap(p);
  }

  /// logits = cap * tanh(logits / cap) (ModelConfig::final_logit_softcap; Gemma: ggml_scale, tanh,
  /// ggml_scale).
  void softcap(const model::PassLayout& p) {
    const float cap = c.final_logit_softcap;
    if (cap == 0.0f) return;
    const int64_t V = output->n_out();
    for (const model::PassSegment& sg : p.segs) {
      const auto n = static_cast<int64_t>(sg.logit_rows.size());
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t i = 0; i < n; ++i) rk->softcap(sg.logits + i * V, V, cap);
    }
  }
};

CpuForward::CpuForward(const model::Model& model, const ForwardOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {}

CpuForward::~CpuForward() = default;

void CpuForward::forward(std::span<const forward::Segment> segments) {
  impl_->driver.forward(segments);
}

forward::Capabilities CpuForward::capabilities() const {
  return impl_->capabilities();
}
int64_t CpuForward::n_vocab() const {
  return impl_->n_vocab();
}
int CpuForward::n_threads() const {
  return impl_->n_threads;
}
int64_t CpuForward::max_tokens() const {
  return impl_->plan.max_tokens();
}
Isa CpuForward::isa() const {
  return impl_->isa;
}
int CpuForward::max_batch() const {
  return impl_->plan.max_batch();
}
size_t CpuForward::buffer_bytes() const {
  const Impl& m = *impl_;
  size_t n = (m.x.size() + m.proj.size() + m.q.size() + m.k.size() + m.v.size() + m.up.size() +
              m.att_scratch.size()) *
             sizeof(float);
  return n + m.normed.bytes() + m.attn_out.bytes() + m.ffn_act.bytes();
}

}  // namespace dllm::cpu
