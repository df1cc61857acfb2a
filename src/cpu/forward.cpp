// CpuForward: the layer sequence of model/layer_desc.h on the CPU, one named block at a time:
//   run:  embed -> per layer: attention_block, then the FFN block its description names (ffn_block,
//         or ffn_moe_block: the routed experts of cpu/moe.h) -> lm_head over the requested rows
// (llama.cpp src/models/llada.cpp, dream.cpp, llada-moe.cpp and rnd1.cpp build the same graph.) Matrices with
// Q4_K / Q6_K weights read their input rounded to Q8_K, as ggml-cpu does (the vec_dot_type of those
// types in ggml-cpu.c); a ProjectionInput makes that rounding once per activation row, inside the pass
// that writes the row (add + RMSNorm + quantize, SiLU * up + quantize), and shares it among the matrices
// that read the same input (Q/K/V, gate/up).
//
// Shapes: `rows` are the activation rows of a pass (model::RowLayout: the positions computed, of
// every sequence); d = n_embd, n_q = n_head * hd, n_kv = n_head_kv * hd, n_ff; every activation is
// row-major, one row per token. A block's output stays in `proj` and the next pass that reads x adds
// it (x += proj "pending"), so the residual add costs no pass of its own.
//
// Threading: OpenMP, dynamic schedules. Matmuls are split into fixed output-row ranges (their size
// depends on the matrix only, never on the thread count) handed out `guided`: runs of consecutive
// ranges per thread, shrinking to single ones at the end, so a kernel's prefetch of the rows after
// its range usually fetches its own thread's next range. Attention is split into (sequence, head)
// items, the row ops into tokens; each output element is computed by one thread in a fixed order, so
// the logits are bit-identical for any thread count.
#include "cpu/forward.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/forward_profile.h"
#include "cpu/kernels/row_kernels.h"
#include "cpu/moe.h"
#include "cpu/ops.h"
#include "cpu/projection_input.h"
#include "model/forward_plan.h"
#include "model/model.h"

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

/// What a pass does with a KV cache: nothing (cache null); a refresh (store every position's K/V,
/// attend over the fresh ones); or a cached step (store the window's K/V, attend over the cache).
struct KvStep {
  KvCache* cache = nullptr;
  bool refresh = false;
  bool reads_cache() const { return cache != nullptr && !refresh; }
};

}  // namespace

struct CpuForward::Impl {
  const model::Model& model;
  const model::ForwardPlan plan;
  const model::ModelConfig& c;        ///< plan.config()
  const model::RopeTable rope_table;  ///< plan.make_rope_table()
  int n_threads = 1;
  Isa isa = Isa::kScalar;
  const RowKernels* rk = nullptr;  ///< quantization, SiLU, RMSNorm and attention kernels of `isa`

  struct LayerMatrices {
    std::unique_ptr<Matrix> q, k, v, o, gate, up, down;
  };
  std::vector<LayerMatrices> layers;  ///< gate / up / down null in a kMoe layer
  std::vector<MoeExperts> experts;    ///< per layer, empty in a kDense layer
  std::unique_ptr<MoeFfn> moe;        ///< the routed FFN and its scratch, when a layer is kMoe
  std::unique_ptr<Matrix> output;

  // Activations, plan.max_rows() rows each.
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

  /// One group of sequences of the pass in progress: a plain, batched or cached pass has one, a
  /// packed pass (forward_packed) one per request. Its activation rows follow the previous group's.
  struct Segment {
    model::RowLayout rl;              ///< its positions computed, rows counted from row0
    int64_t row0 = 0;                 ///< its first activation row
    int64_t head_row0 = 0;            ///< its first LM-head row (in normed, at lm_head)
    std::span<const int32_t> tokens;  ///< rl.n_seq x rl.n
    std::span<const int32_t> rows;    ///< positions whose logits are wanted, of every sequence
    float* logits = nullptr;          ///< rl.n_seq x rows.size() x n_vocab
    KvStep kv;
  };

  /// The pass in progress (run() sets it; the blocks read it).
  struct Pass {
    std::vector<Segment> segs;
    int64_t n_rows = 0;       ///< activation rows of every segment
    int64_t n_head_rows = 0;  ///< LM-head rows of every segment
  } pass;
  std::vector<int32_t> row_seg;   ///< max_rows: the segment of each activation row
  std::vector<int32_t> head_seg;  ///< max_rows: the segment of each LM-head row
  /// (segment, sequence within it) of every sequence of the pass: attention's items / n_head.
  std::vector<std::pair<int32_t, int32_t>> attn_seqs;

  ~Impl() {
    prof.print();
    if (moe) moe->print_times(prof.forwards);
  }

  /// Throws what ForwardPlan, choose_isa and make_matrix throw.
  Impl(const model::Model& m, const ForwardOptions& opt)
      : model(m),
        plan(m, opt.max_tokens, opt.max_batch, opt.rope_mode),
        c(plan.config()),
        rope_table(plan.make_rope_table()) {
    n_threads = opt.n_threads > 0 ? opt.n_threads : physical_core_count();
    isa = opt.isa ? *opt.isa : choose_isa("");
    rk = &row_kernels(isa);
    make_matrices();
    allocate();
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
      lm.v = make(lw.attn_v);
      lm.o = make(lw.attn_output);
      switch (plan.layer(il).ffn) {
        case model::FfnKind::kDense:
          lm.gate = make(lw.ffn_gate);
          lm.up = make(lw.ffn_up);
          lm.down = make(lw.ffn_down);
          experts.emplace_back();
          break;
        case model::FfnKind::kMoe:
          experts.push_back(make_moe_experts(model, lw, isa));
          break;
      }
      layers.push_back(std::move(lm));
    }
    output = make(&model.output());
  }

  /// Every activation buffer, sized once for plan.max_rows() rows: forward() never allocates.
  void allocate() {
    const model::ActivationWidths& w = plan.widths();
    const auto rows = static_cast<size_t>(plan.max_rows());
    q_ld = w.q + kRowPad;
    kv_ld = w.kv + kRowPad;
    x.resize(rows * w.embd);
    proj.resize(rows * w.embd);
    q.resize(rows * q_ld);
    k.resize(rows * kv_ld);
    v.resize(rows * kv_ld);
    std::vector<const Matrix*> normed_users{output.get()}, o_users, down_users;
    for (const LayerMatrices& lm : layers) {
      normed_users.insert(normed_users.end(), {lm.q.get(), lm.k.get(), lm.v.get()});
      o_users.push_back(lm.o.get());
      if (lm.down) {
        normed_users.insert(normed_users.end(), {lm.gate.get(), lm.up.get()});
        down_users.push_back(lm.down.get());
      }
    }
    normed = ProjectionInput(plan.max_rows(), w.embd, normed_users);
    attn_out = ProjectionInput(plan.max_rows(), w.q, o_users);
    if (!down_users.empty()) {
      up.resize(rows * w.ff);
      ffn_act = ProjectionInput(plan.max_rows(), w.ff, down_users);
    }
    bool routed = false;
    for (size_t il = 0; il < plan.n_layer(); ++il) routed |= plan.layer(il).ffn == model::FfnKind::kMoe;
    if (routed) {
      moe = std::make_unique<MoeFfn>(c, experts, plan.max_rows(), isa, n_threads);
      moe->set_timing(prof.on);  // its passes under $DLLM_PROFILE, printed after the phase table
    }
    att_scratch_stride = attention_scratch_floats(c.head_dim, plan.max_tokens());
    att_scratch.resize(static_cast<size_t>(n_threads) * att_scratch_stride);
    row_seg.resize(rows);
    head_seg.resize(rows);
    attn_seqs.reserve(rows);
    pass.segs.reserve(static_cast<size_t>(plan.max_batch()));
  }

  /// Each out.y = W x over the n rows of `in` (every matrix's full output range), all N matrices'
  /// work items in one parallel loop.
  template <size_t N>
  void project(Phase phase, const ProjectionInput& in, int64_t n, const ProjectionOut (&out)[N]) {
    const Profile::Scope ps(prof, phase);
    const Activations x_in = in.view(n);
    std::array<int64_t, N + 1> first{};  // first work item of each matrix
    std::array<int64_t, N> chunk{};
    for (size_t j = 0; j < N; ++j) {
      chunk[j] = chunk_rows(*out[j].m);
      first[j + 1] = first[j] + (out[j].m->n_out() + chunk[j] - 1) / chunk[j];
    }
    const int64_t n_items = first[N];
#pragma omp parallel for schedule(guided) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      size_t j = 0;
      while (item >= first[j + 1]) ++j;
      const int64_t begin = (item - first[j]) * chunk[j];
      const int64_t end = std::min(begin + chunk[j], out[j].m->n_out());
      out[j].m->multiply(x_in, begin, end, out[j].y, out[j].ldy);
    }
  }

  /// x = token_embd[tokens], one row per activation row.                               rows x d
  void embed() {
    const Profile::Scope ps(prof, Phase::kEmbed);
    const int64_t d = c.n_embd;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < pass.n_rows; ++r) {
      const Segment& sg = pass.segs[row_seg[r]];
      model.dequantize_row(model.token_embd(), sg.tokens[sg.rl.token_index(r - sg.row0)], &x[r * d]);
    }
    pending = false;
  }

  /// x += proj when a block's output is pending, then normed = RMSNorm(x) * w, quantized for its
  /// matrices in the same pass (the row is still in L1/L2) unless `quantize` is false (the routed
  /// FFN rounds its input itself, for its experts' types).                             n x d
  void norm(const std::vector<float>& w, int64_t n, bool quantize = true) {
    const Profile::Scope ps(prof, Phase::kNorm);
    const int64_t d = c.n_embd;
    const bool add = pending;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < n; ++r) {
      if (add) add_inplace(&x[r * d], &proj[r * d], d);
      rk->rmsnorm(&x[r * d], w.data(), normed.row(r), d, c.rms_eps);
      if (quantize) normed.prepare_row(*rk, r);
    }
    pending = false;
  }

  /// x += Attention(RMSNorm(x) * attn_norm), the add left pending in proj (layer_desc.h).
  void attention_block(size_t il) {
    const LayerMatrices& lm = layers[il];
    const int64_t n = pass.n_rows;
    norm(model.layers()[il].attn_norm, n);  // h: rows x d
    // q = h Wq: rows x n_q; k = h Wk, v = h Wv: rows x n_kv
    project(Phase::kGemmQkv, normed, n,
            {{lm.q.get(), q.data(), q_ld}, {lm.k.get(), k.data(), kv_ld}, {lm.v.get(), v.data(), kv_ld}});
    bias_rope(il);
    for (const Segment& sg : pass.segs)
      if (sg.kv.cache != nullptr) store_kv(il, sg);
    attention(il);  // attn_out: rows x n_q
    {
      const Profile::Scope ps(prof, Phase::kQuantize);
      attn_out.prepare(*rk, n, n_threads);
    }
    project(Phase::kGemmO, attn_out, n, {{lm.o.get(), proj.data(), c.n_embd}});  // proj: rows x d
    pending = true;
  }

  /// Per activation row: q, k, v += their biases (qkv_bias), the per-head RMSNorm of q and k
  /// (qk_norm), then RoPE on every head of q and k with the angles of the row's position.
  void bias_rope(size_t il) {
    const Profile::Scope ps(prof, Phase::kBiasRope);
    const model::LayerDesc& desc = plan.layer(il);
    const model::LayerWeights& lw = model.layers()[il];
    const model::RopeTable& angles = rope_table;
    const int64_t hd = c.head_dim, n_q = plan.widths().q, n_kv = plan.widths().kv;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < pass.n_rows; ++r) {
      const Segment& sg = pass.segs[row_seg[r]];
      const int64_t pos = sg.rl.position(r - sg.row0);
      float* qt = &q[r * q_ld];
      float* kt = &k[r * kv_ld];
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
        for (int64_t h = 0; h < c.n_head_kv; ++h)
          rk->rmsnorm(kt + h * hd, lw.attn_k_norm.data(), kt + h * hd, hd, c.rms_eps);
      }
      rope(qt, c.n_head, hd, angles.cos(pos), angles.sin(pos), desc.rope_mode);
      rope(kt, c.n_head_kv, hd, angles.cos(pos), angles.sin(pos), desc.rope_mode);
    }
  }

  /// Where layer il's K (or V) rows start in `cache`: il x capacity x widths().kv floats.
  size_t kv_layer_offset(const KvCache& cache, size_t il) const {
    return il * static_cast<size_t>(cache.capacity * plan.widths().kv);
  }

  /// Before a refresh of an n-position canvas: grows `cache` to n positions per layer when it holds
  /// fewer (never beyond what the canvas needs: see KvCache), and marks it invalid until the refresh
  /// completes.
  void size_kv(KvCache& cache, int64_t n) const {
    if (cache.capacity < n) {
      const size_t need = plan.n_layer() * static_cast<size_t>(n * plan.widths().kv);
      cache.k.assign(need, 0.0f);
      cache.v.assign(need, 0.0f);
      cache.capacity = n;
    }
    cache.n_tokens = 0;
  }

  /// The fresh K/V of the computed positions of segment sg (one sequence) into layer il's slots of
  /// its cache: a refresh writes every position, a cached step the window's (Fast-dLLM's
  /// replace_position); the others stay as the last refresh left them.      rows x n_kv, each
  void store_kv(size_t il, const Segment& sg) {
    const Profile::Scope ps(prof, Phase::kKvCache);
    const model::RowLayout& rl = sg.rl;
    KvCache& cache = *sg.kv.cache;
    const int64_t n_kv = plan.widths().kv;
    const size_t at = kv_layer_offset(cache, il) + static_cast<size_t>(rl.begin * n_kv);
    for (int64_t r = 0; r < rl.rows_of(0); ++r) {
      std::copy_n(&k[(sg.row0 + r) * kv_ld], n_kv, cache.k.data() + at + r * n_kv);
      std::copy_n(&v[(sg.row0 + r) * kv_ld], n_kv, cache.v.data() + at + r * n_kv);
    }
  }

  /// attn_out = softmax(q k^T / sqrt(hd)) v per (sequence, query head), no mask, GQA (query head h
  /// reads kv head h / (n_head / n_head_kv)), each sequence of each segment against its own keys
  /// only: its fresh k / v, or every position's from its cache on a cached step.        rows x n_q
  void attention(size_t il) {
    const Profile::Scope ps(prof, Phase::kAttention);
    const auto n_items = static_cast<int64_t>(attn_seqs.size()) * c.n_head;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      const auto [seg, s] = attn_seqs[item / c.n_head];
      AttentionHead a = attention_head(il, pass.segs[seg], s, item % c.n_head);
      a.scratch = att_scratch.data() + static_cast<size_t>(omp_get_thread_num()) * att_scratch_stride;
      rk->attention_head(a);
    }
  }

  /// One work item of attention(): every query row of sequence s of segment sg, head h, against its
  /// keys.
  AttentionHead attention_head(size_t il, const Segment& sg, int64_t s, int64_t h) {
    const model::RowLayout& rl = sg.rl;
    const KvCache* cache = sg.kv.reads_cache() ? sg.kv.cache : nullptr;
    const int64_t hd = c.head_dim, kvh = h / (c.n_head / c.n_head_kv), row0 = sg.row0 + rl.first_row(s);
    AttentionHead a;
    a.q = &q[row0 * q_ld + h * hd];
    a.q_stride = q_ld;
    a.n_q = rl.rows_of(s);
    if (cache != nullptr) {
      const size_t layer = kv_layer_offset(*cache, il);
      a.k = cache->k.data() + layer + kvh * hd;
      a.v = cache->v.data() + layer + kvh * hd;
      a.kv_stride = plan.widths().kv;
    } else {
      a.k = &k[row0 * kv_ld + kvh * hd];
      a.v = &v[row0 * kv_ld + kvh * hd];
      a.kv_stride = kv_ld;
    }
    a.n_kv = rl.keys_of(s);
    a.head_dim = hd;
    a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    a.out = attn_out.row(row0) + h * hd;
    a.out_stride = plan.widths().q;
    return a;
  }

  /// x += (silu(h Wgate) * (h Wup)) Wdown with h = RMSNorm(x) * ffn_norm, the add left pending in
  /// proj (FfnKind::kDense).
  void ffn_block(size_t il) {
    const LayerMatrices& lm = layers[il];
    const int64_t n = pass.n_rows, n_ff = c.n_ff;
    norm(model.layers()[il].ffn_norm, n);  // h: rows x d
    // ffn_act = h Wgate, up = h Wup: rows x n_ff
    project(Phase::kGemmGateUp, normed, n,
            {{lm.gate.get(), ffn_act.row(0), n_ff}, {lm.up.get(), up.data(), n_ff}});
    {
      // ffn_act = silu(ffn_act) * up, and its rounding for Wdown, in one pass per row.
      const Profile::Scope ps(prof, Phase::kSiluMul);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < n; ++r) {
        rk->silu_mul(ffn_act.row(r), &up[r * n_ff], ffn_act.row(r), n_ff);
        ffn_act.prepare_row(*rk, r);
      }
    }
    project(Phase::kGemmDown, ffn_act, n, {{lm.down.get(), proj.data(), c.n_embd}});  // proj: rows x d
    pending = true;
  }

  /// x += MoE(h) with h = RMSNorm(x) * ffn_norm (FfnKind::kMoe, cpu/moe.h: route, expert-grouped
  /// GEMMs, weighted sum), the add left pending in proj.
  void ffn_moe_block(size_t il) {
    const int64_t n = pass.n_rows;                             // every segment's rows: routing is per row
    norm(model.layers()[il].ffn_norm, n, /*quantize=*/false);  // h: rows x d, normed's f32 rows
    const Profile::Scope ps(prof, Phase::kMoeFfn);
    moe->forward(model.layers()[il], experts[il], normed.row(0), n, proj.data(), c.n_embd);  // rows x d
    pending = true;
  }

  /// logits = (RMSNorm(x + proj) * output_norm) Woutput for the requested rows of every sequence
  /// of every segment (into each segment's logits: n_seq x rows.size() rows of n_vocab,
  /// sequence-major). The last block's pending add is made for those rows only, into normed (x is
  /// not written). The matrix runs over each segment's rows apart (as a pass of that segment alone
  /// would), one output-row range of the weights at a time for all segments.
  void lm_head() {
    const int64_t n_head_rows = pass.n_head_rows, d = c.n_embd;
    if (n_head_rows == 0) return;
    {
      const Profile::Scope ps(prof, Phase::kNorm);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t j = 0; j < n_head_rows; ++j) {
        const Segment& sg = pass.segs[head_seg[j]];
        const auto n_rows = static_cast<int64_t>(sg.rows.size());
        const int64_t jj = j - sg.head_row0;
        const int64_t r = sg.row0 + sg.rl.row_of(jj / n_rows, sg.rows[jj % n_rows]);
        float* h = normed.row(j);
        std::copy_n(&x[r * d], d, h);
        if (pending) add_inplace(h, &proj[r * d], d);
        rk->rmsnorm(h, model.output_norm().data(), h, d, c.rms_eps);
        normed.prepare_row(*rk, j);
      }
    }
    if (pass.segs.size() == 1) {
      project(Phase::kLmHead, normed, n_head_rows, {{output.get(), pass.segs[0].logits, output->n_out()}});
      return;
    }
    const Profile::Scope ps(prof, Phase::kLmHead);
    const int64_t chunk = chunk_rows(*output), n_out = output->n_out();
    const int64_t n_items = (n_out + chunk - 1) / chunk;
#pragma omp parallel for schedule(guided) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      const int64_t begin = item * chunk, end = std::min(begin + chunk, n_out);
      for (const Segment& sg : pass.segs) {
        const int64_t n = sg.rl.n_seq * static_cast<int64_t>(sg.rows.size());
        if (n > 0) output->multiply(normed.view(sg.head_row0, n), begin, end, sg.logits, n_out);
      }
    }
  }

  /// Starts a pass: no segment yet.
  void begin_pass() {
    pass.segs.clear();
    pass.n_rows = 0;
    pass.n_head_rows = 0;
  }

  /// Appends a segment (inputs already checked); throws dllm::Error when the pass's rows would exceed
  /// the buffers (max_batch x max_tokens).
  void add_segment(const model::RowLayout& rl, std::span<const int32_t> tokens, std::span<const int32_t> rows,
                   float* logits, const KvStep& kv) {
    Segment sg{rl, pass.n_rows, pass.n_head_rows, tokens, rows, logits, kv};
    const int64_t n_head = rl.n_seq * static_cast<int64_t>(rows.size());
    if (pass.n_rows + rl.n_rows() > plan.max_rows()) {
      throw Error("forward_packed: " + std::to_string(pass.n_rows + rl.n_rows()) +
                  " activation rows, at most " + std::to_string(plan.max_rows()) +
                  " (max_batch x max_tokens)");
    }
    pass.n_rows += rl.n_rows();
    pass.n_head_rows += n_head;
    pass.segs.push_back(sg);
  }

  /// Runs the pass over the segments added since begin_pass(): the plan's layer sequence.
  void run_pass() {
    ++prof.forwards;
    attn_seqs.clear();
    for (size_t i = 0; i < pass.segs.size(); ++i) {
      const Segment& sg = pass.segs[i];
      std::fill_n(row_seg.begin() + sg.row0, sg.rl.n_rows(), static_cast<int32_t>(i));
      std::fill_n(head_seg.begin() + sg.head_row0, sg.rl.n_seq * static_cast<int64_t>(sg.rows.size()),
                  static_cast<int32_t>(i));
      for (int64_t s = 0; s < sg.rl.n_seq; ++s)
        attn_seqs.emplace_back(static_cast<int32_t>(i), static_cast<int32_t>(s));
    }
    model::run_layers(plan, *this);
  }

  /// The pass over the rows of `rl` (inputs already checked): the plan's layer sequence.
  void run(const model::RowLayout& rl, std::span<const int32_t> tokens, std::span<const int32_t> rows,
           float* logits, const KvStep& kv) {
    begin_pass();
    add_segment(rl, tokens, rows, logits, kv);
    run_pass();
  }

  void forward_packed(std::span<const PackedSeq> seqs);

  void forward_window(std::span<const int32_t> tokens, int64_t wb, int64_t we, std::span<const int32_t> rows,
                      float* logits, KvCache& cache, bool refresh) {
    if (refresh) {
      const model::RowLayout rl = plan.check_forward(tokens, rows);
      size_kv(cache, rl.n);
      run(rl, tokens, rows, logits, KvStep{&cache, true});
      cache.n_tokens = rl.n;
      return;
    }
    const auto n = static_cast<int64_t>(tokens.size());
    plan.check_tokens(tokens, n);
    if (cache.n_tokens != n) {
      throw Error("forward_window: the KV cache holds " + std::to_string(cache.n_tokens) +
                  " positions, the canvas has " + std::to_string(n) + ": run a refresh step first");
    }
    run(plan.check_window(n, wb, we, rows), tokens, rows, logits, KvStep{&cache, false});
  }
};

void CpuForward::Impl::forward_packed(std::span<const PackedSeq> seqs) {
  if (seqs.empty()) throw Error("forward_packed: no sequences");
  // Every check before anything is computed or any cache is touched.
  std::vector<model::RowLayout> layouts;
  layouts.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const PackedSeq& q = seqs[i];
    if (q.cache == nullptr) {
      layouts.push_back(plan.check_batch(q.tokens, q.n_seq, q.rows));
      continue;
    }
    if (q.n_seq != 1) {
      throw Error("forward_packed: request " + std::to_string(i) + " is a KV cache step of " +
                  std::to_string(q.n_seq) + " canvases; a cache holds one canvas");
    }
    for (size_t j = 0; j < i; ++j)
      if (seqs[j].cache == q.cache)
        throw Error("forward_packed: requests " + std::to_string(j) + " and " + std::to_string(i) +
                    " use the same KV cache");
    if (q.refresh) {
      layouts.push_back(plan.check_forward(q.tokens, q.rows));
      continue;
    }
    const auto n = static_cast<int64_t>(q.tokens.size());
    plan.check_tokens(q.tokens, n);
    if (q.cache->n_tokens != n) {
      throw Error("forward_window: the KV cache holds " + std::to_string(q.cache->n_tokens) +
                  " positions, the canvas has " + std::to_string(n) + ": run a refresh step first");
    }
    layouts.push_back(plan.check_window(n, q.window_begin, q.window_end, q.rows));
  }
  begin_pass();
  for (size_t i = 0; i < seqs.size(); ++i)
    add_segment(layouts[i], seqs[i].tokens, seqs[i].rows, seqs[i].logits,
                KvStep{seqs[i].cache, seqs[i].refresh});
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i].cache != nullptr && seqs[i].refresh) size_kv(*seqs[i].cache, layouts[i].n);
  run_pass();
  for (size_t i = 0; i < seqs.size(); ++i)
    if (seqs[i].cache != nullptr && seqs[i].refresh) seqs[i].cache->n_tokens = layouts[i].n;
}

CpuForward::CpuForward(const model::Model& model, const ForwardOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {}

CpuForward::~CpuForward() = default;

void CpuForward::forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* logits) {
  impl_->run(impl_->plan.check_forward(tokens, rows), tokens, rows, logits, KvStep{});
}

void CpuForward::forward_batch(std::span<const int32_t> tokens, int64_t n_seq, std::span<const int32_t> rows,
                               float* logits) {
  impl_->run(impl_->plan.check_batch(tokens, n_seq, rows), tokens, rows, logits, KvStep{});
}

void CpuForward::forward_window(std::span<const int32_t> tokens, int64_t window_begin, int64_t window_end,
                                std::span<const int32_t> rows, float* logits, KvCache& cache, bool refresh) {
  impl_->forward_window(tokens, window_begin, window_end, rows, logits, cache, refresh);
}

void CpuForward::forward_packed(std::span<const PackedSeq> seqs) {
  impl_->forward_packed(seqs);
}

int64_t CpuForward::packed_rows(const PackedSeq& s) {
  if (s.cache != nullptr && !s.refresh) return s.window_end - s.window_begin;
  return static_cast<int64_t>(s.tokens.size());
}

int64_t CpuForward::n_vocab() const {
  return impl_->output->n_out();
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

}  // namespace dllm::cpu
