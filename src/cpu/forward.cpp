// CpuForward: the LLaDA / Dream transformer on the CPU (both Llama-style, bidirectional):
//   x = token_embd[tokens]
//   per layer: h = RMSNorm(x) * attn_norm; q, k, v = h Wq (+bq), h Wk (+bk), h Wv (+bv);
//              RoPE(q, k) (LLaDA normal pairs, Dream NEOX halves); a = softmax(q k^T / sqrt(hd)) v per
//              head (kv head = q head / (n_head / n_head_kv)), no mask; x += a Wo;
//              h = RMSNorm(x) * ffn_norm; x += (silu(h Wgate) * (h Wup)) Wdown
//   logits[rows] = (RMSNorm(x[rows]) * output_norm) Woutput
// (llama.cpp src/models/llada.cpp and dream.cpp build the same graph.) Matrices with Q4_K / Q6_K
// weights see their input rounded to Q8_K first, as ggml-cpu does (../shared/reference/README.md,
// "Numerics"); that rounding is done once per projection input and shared by Q/K/V and by gate/up.
//
// Threading: OpenMP, dynamic schedules. Matmuls are split into fixed output-row ranges (their size
// depends on the matrix only, never on the thread count) handed out `guided`: runs of consecutive
// ranges per thread, shrinking to single ones at the end, so a kernel's prefetch of the rows after
// its range usually fetches its own thread's next range. Attention is split into (sequence, head)
// items, the row ops into tokens; each output element is computed by one thread in a fixed order, so
// the logits are bit-identical for any thread count.
#include "cpu/forward.h"

#include <omp.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/ops.h"
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/row_kernels.h"
#include "model/model.h"
#include "quant/quant.h"

namespace dllm::cpu {

int physical_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    std::set<std::pair<std::string, std::string>> cores;
    bool readable = true;
    for (int cpu = 0; cpu < CPU_SETSIZE && readable; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
      std::string p, c;
      if (!(pkg >> p) || !(core >> c)) readable = false;
      cores.emplace(p, c);
    }
    if (readable && !cores.empty()) return static_cast<int>(cores.size());
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

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

/// One matmul of a batch: y[t * ldy + o] = W x_t.
struct MatmulJob {
  const Matrix* m = nullptr;
  const Activations* x = nullptr;
  float* y = nullptr;
  int64_t ldy = 0;
};

/// Opt-in per-phase timing of the forward pass ($DLLM_PROFILE=1): wall time and process CPU time
/// (all threads, spin-waiting included) per phase, summed over forwards and printed per forward to
/// stderr when the CpuForward is destroyed. Off (the default), a phase costs one branch.
enum class Phase {
  kEmbed,
  kNorm,
  kQuantize,
  kGemmQkv,
  kBiasRope,
  kKvCache,
  kAttention,
  kGemmO,
  kResidual,
  kGemmGateUp,
  kSiluMul,
  kGemmDown,
  kLmHead,
  kCount
};
constexpr const char* kPhaseNames[] = {
    "embedding", "add+norm+q8",  "q8_K quantize", "gemm q/k/v", "bias+rope", "kv cache",    "attention",
    "gemm o",    "residual add", "gemm gate/up",  "silu*up+q8", "gemm down", "gemm lm head"};
static_assert(std::size(kPhaseNames) == static_cast<size_t>(Phase::kCount));

struct Profile {
  bool on = false;
  int64_t forwards = 0;
  std::array<double, static_cast<size_t>(Phase::kCount)> wall_s{}, cpu_s{};

  static double cpu_now() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  static double wall_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  /// Times one phase from construction to destruction.
  class Scope {
   public:
    Scope(Profile& p, Phase phase) : p_(p.on ? &p : nullptr), phase_(phase) {
      if (p_ != nullptr) {
        wall0_ = wall_now();
        cpu0_ = cpu_now();
      }
    }
    ~Scope() {
      if (p_ == nullptr) return;
      p_->wall_s[static_cast<size_t>(phase_)] += wall_now() - wall0_;
      p_->cpu_s[static_cast<size_t>(phase_)] += cpu_now() - cpu0_;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Profile* p_;
    Phase phase_;
    double wall0_ = 0, cpu0_ = 0;
  };

  void print() const {
    if (!on || forwards == 0) return;
    double wall = 0, cpu = 0;
    for (size_t i = 0; i < wall_s.size(); ++i) {
      wall += wall_s[i];
      cpu += cpu_s[i];
    }
    const double per = 1e3 / static_cast<double>(forwards);
    std::fprintf(stderr, "profile: %lld forward passes; per pass:\n%-14s %10s %6s %10s %6s\n",
                 static_cast<long long>(forwards), "phase", "wall ms", "wall%", "cpu ms", "cpu%");
    for (size_t i = 0; i < wall_s.size(); ++i) {
      std::fprintf(stderr, "%-14s %10.1f %6.1f %10.1f %6.1f\n", kPhaseNames[i], wall_s[i] * per,
                   100.0 * wall_s[i] / wall, cpu_s[i] * per, 100.0 * cpu_s[i] / cpu);
    }
    std::fprintf(stderr, "%-14s %10.1f %6.1f %10.1f %6.1f\n", "total", wall * per, 100.0, cpu * per, 100.0);
  }
};

}  // namespace

struct CpuForward::Impl {
  const model::Model& model;
  model::ModelConfig c;
  int64_t max_tokens = 0;
  int max_batch = 1;
  int n_threads = 1;
  Isa isa = Isa::kScalar;

  struct LayerMatrices {
    std::unique_ptr<Matrix> q, k, v, o, gate, up, down;
  };
  std::vector<LayerMatrices> layers;
  std::unique_ptr<Matrix> output;
  RopeTable rope_table;

  // Activation buffers, all sized for max_batch x max_tokens rows (row-major, one row per token).
  std::vector<float> x;            ///< residual stream, n_embd
  std::vector<float> xn;           ///< normalized input of a projection, n_embd
  std::vector<float> q, k, v;      ///< n_head * hd, n_head_kv * hd, n_head_kv * hd
  std::vector<float> att;          ///< attention output before Wo, n_head * hd
  std::vector<float> proj;         ///< output of Wo / Wdown before the residual add, n_embd
  std::vector<float> gate, up;     ///< n_ff
  std::vector<float> att_scratch;  ///< n_threads x att_scratch_stride: attention_head's scratch
  size_t att_scratch_stride = 0;
  const RowKernels* rk = nullptr;  ///< quantization, SiLU and attention kernels of `isa`
  std::vector<quant::block_q8_K> q8_embd, q8_att, q8_ff;  ///< Q8_K copies of xn / att / gate
  std::vector<int16_t> bs_embd, bs_att, bs_ff;            ///< their sums of 32 (qgemm::make_bs32)
  std::vector<uint8_t> u8_embd, u8_att, u8_ff;            ///< their values + 128 (qgemm::make_u8)
  bool u8_embd_used = false, u8_att_used = false, u8_ff_used = false;
  bool q8_embd_used = false, q8_att_used = false, q8_ff_used = false, q8_head_used = false;

  /// The Q8_0 rounding of one projection input (ggml's activation format for Q8_0 weights) and its
  /// bytes + 128 (for the VNNI Q8_0 kernels), one row per activation row; empty when no matrix of
  /// that input is Q8_0.
  struct Q80Copy {
    std::vector<quant::block_q8_0> q;
    std::vector<uint8_t> u;
    int64_t n_in = 0;
    void resize(size_t rows, int64_t n, bool used, bool u_used) {
      n_in = n;
      if (used) q.resize(rows * static_cast<size_t>(n / quant::kQK8_0));
      if (used && u_used) u.resize(rows * static_cast<size_t>(n));
    }
    /// Row r from its n_in floats at src (no-op when unused).
    void make(const float* src, int64_t r) {
      if (q.empty()) return;
      const int64_t nb = n_in / quant::kQK8_0;
      quant::quantize_row_q8_0(src, q.data() + r * nb, n_in);
      if (!u.empty()) qgemm::make_u8_q8_0(q.data() + r * nb, 1, nb, u.data() + r * n_in);
    }
    void attach(Activations& a) const {
      a.q8_0 = q.empty() ? nullptr : q.data();
      a.q8_0u = u.empty() ? nullptr : u.data();
    }
  };
  Q80Copy q80_embd, q80_att, q80_ff;  ///< of xn / att / gate
  Profile prof;

  ~Impl() { prof.print(); }

  Impl(const model::Model& m, const ForwardOptions& opt) : model(m), c(m.config()) {
    if (opt.max_tokens <= 0)
      throw Error("max_tokens must be positive (got " + std::to_string(opt.max_tokens) + ")");
    max_tokens = opt.max_tokens;
    if (opt.max_batch < 1)
      throw Error("max_batch must be positive (got " + std::to_string(opt.max_batch) + ")");
    max_batch = opt.max_batch;
    n_threads = opt.n_threads > 0 ? opt.n_threads : physical_core_count();
    isa = opt.isa ? *opt.isa : choose_isa("");
    if (opt.rope_mode) c.rope_mode = *opt.rope_mode;
    const char* profile_env = std::getenv("DLLM_PROFILE");
    prof.on = profile_env != nullptr && profile_env[0] != '\0' && std::string(profile_env) != "0";

    // A matrix that copied / repacked its weights no longer reads the mapping: give those pages back so
    // the model is resident once (issue 3, memory). A later read (the tied embedding lookup) faults
    // them in again from the file.
    auto make = [&](const gguf::TensorInfo* t) {
      std::unique_ptr<Matrix> mat = make_matrix(*t, m.data(*t), isa);
      if (mat->owns_data()) m.file().release_pages(*t);
      return mat;
    };
    bool q80_embd_used = false, q80u_embd_used = false, q80_att_used = false, q80u_att_used = false;
    bool q80_ff_used = false, q80u_ff_used = false;
    for (const model::LayerWeights& lw : m.layers()) {
      LayerMatrices lm;
      lm.q = make(lw.attn_q);
      lm.k = make(lw.attn_k);
      lm.v = make(lw.attn_v);
      lm.o = make(lw.attn_output);
      lm.gate = make(lw.ffn_gate);
      lm.up = make(lw.ffn_up);
      lm.down = make(lw.ffn_down);
      q8_embd_used |= lm.q->wants_q8k() || lm.k->wants_q8k() || lm.v->wants_q8k() || lm.gate->wants_q8k() ||
                      lm.up->wants_q8k();
      q8_att_used |= lm.o->wants_q8k();
      u8_embd_used |= lm.q->wants_q8u() || lm.k->wants_q8u() || lm.v->wants_q8u() || lm.gate->wants_q8u() ||
                      lm.up->wants_q8u();
      u8_att_used |= lm.o->wants_q8u();
      u8_ff_used |= lm.down->wants_q8u();
      q8_ff_used |= lm.down->wants_q8k();
      for (const Matrix* mat : {lm.q.get(), lm.k.get(), lm.v.get(), lm.gate.get(), lm.up.get()}) {
        q80_embd_used |= mat->wants_q8_0();
        q80u_embd_used |= mat->wants_q8_0u();
      }
      q80_att_used |= lm.o->wants_q8_0();
      q80u_att_used |= lm.o->wants_q8_0u();
      q80_ff_used |= lm.down->wants_q8_0();
      q80u_ff_used |= lm.down->wants_q8_0u();
      layers.push_back(std::move(lm));
    }
    output = make(&m.output());
    q8_head_used = output->wants_q8k();
    u8_embd_used |= output->wants_q8u();
    q80_embd_used |= output->wants_q8_0();
    q80u_embd_used |= output->wants_q8_0u();

    rope_table = RopeTable(c.head_dim, max_tokens, c.rope_freq_base);

    const auto L = static_cast<size_t>(max_tokens) * static_cast<size_t>(max_batch);  // activation rows
    const auto n_q = static_cast<size_t>(c.n_head * c.head_dim);
    const auto n_kv = static_cast<size_t>(c.n_head_kv * c.head_dim);
    x.resize(L * c.n_embd);
    xn.resize(L * c.n_embd);
    q.resize(L * (n_q + kRowPad));
    k.resize(L * (n_kv + kRowPad));
    v.resize(L * (n_kv + kRowPad));
    att.resize(L * n_q);
    proj.resize(L * c.n_embd);
    gate.resize(L * c.n_ff);
    up.resize(L * c.n_ff);
    rk = &row_kernels(isa);
    att_scratch_stride = attention_scratch_floats(c.head_dim, max_tokens);
    att_scratch.resize(static_cast<size_t>(n_threads) * att_scratch_stride);
    // A Q4_K / Q6_K matrix's n_in is a multiple of 256 by its block geometry, so these divide.
    if (q8_embd_used || q8_head_used) q8_embd.resize(L * (c.n_embd / quant::kQK_K));
    if (q8_att_used) q8_att.resize(L * (n_q / quant::kQK_K));
    if (q8_ff_used) q8_ff.resize(L * (c.n_ff / quant::kQK_K));
    bs_embd.resize(q8_embd.size() * 8);
    bs_att.resize(q8_att.size() * 8);
    bs_ff.resize(q8_ff.size() * 8);
    if (u8_embd_used) u8_embd.resize(q8_embd.size() * quant::kQK_K);
    if (u8_att_used) u8_att.resize(q8_att.size() * quant::kQK_K);
    if (u8_ff_used) u8_ff.resize(q8_ff.size() * quant::kQK_K);
    // A Q8_0 matrix's n_in is a multiple of 32 (make_matrix checks it).
    q80_embd.resize(L, c.n_embd, q80_embd_used, q80u_embd_used);
    q80_att.resize(L, static_cast<int64_t>(n_q), q80_att_used, q80u_att_used);
    q80_ff.resize(L, c.n_ff, q80_ff_used, q80u_ff_used);
  }

  /// Runs every job's full output range, all jobs' work items in one parallel loop.
  template <size_t N>
  void matmul(const std::array<MatmulJob, N>& jobs) {
    std::array<int64_t, N + 1> first{};  // first work item of each job
    std::array<int64_t, N> chunk{};
    for (size_t j = 0; j < N; ++j) {
      chunk[j] = chunk_rows(*jobs[j].m);
      first[j + 1] = first[j] + (jobs[j].m->n_out() + chunk[j] - 1) / chunk[j];
    }
    const int64_t n_items = first[N];
#pragma omp parallel for schedule(guided) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      size_t j = 0;
      while (item >= first[j + 1]) ++j;
      const MatmulJob& job = jobs[j];
      const int64_t begin = (item - first[j]) * chunk[j];
      const int64_t end = std::min(begin + chunk[j], job.m->n_out());
      job.m->multiply(*job.x, begin, end, job.y, job.ldy);
    }
  }

  /// Activations view of n rows of `f32` (n_in wide), quantized to Q8_K into `q8` when `use_q8`, and
  /// to Q8_0 into `q80` when a matrix of this input is Q8_0.
  Activations activations(const float* f32, int64_t n, int64_t n_in, std::vector<quant::block_q8_K>& q8,
                          std::vector<int16_t>& bs, std::vector<uint8_t>& u8, bool use_q8, Q80Copy& q80) {
    Activations a;
    a.f32 = f32;
    a.n_tokens = n;
    a.n_in = n_in;
    if (use_q8 || !q80.q.empty()) {
      const Profile::Scope ps(prof, Phase::kQuantize);
      const int64_t nb = n_in / quant::kQK_K;
      quant::block_q8_K* dst = q8.data();
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t t = 0; t < n; ++t) {
        if (use_q8) {
          rk->quantize_q8_K(f32 + t * n_in, dst + t * nb, n_in);
          qgemm::make_bs32(dst + t * nb, 1, nb, bs.data() + t * nb * 8);
          if (!u8.empty()) qgemm::make_u8(dst + t * nb, 1, nb, u8.data() + t * n_in);
        }
        q80.make(f32 + t * n_in, t);
      }
      if (use_q8) {
        a.q8k = dst;
        a.bs32 = bs.data();
        a.q8u = u8.empty() ? nullptr : u8.data();
      }
      q80.attach(a);
    }
    return a;
  }

  /// One pass over the n activation rows: x += proj first when `add_proj` (the residual of the
  /// previous block), then xn = RMSNorm(x) * w, then xn's Q8_K rounding when a matrix needs it. The
  /// Activations view of xn (shared by Q/K/V, or by gate/up).
  Activations norm_rows(const float* w, int64_t n, bool add_proj) {
    const Profile::Scope ps(prof, Phase::kNorm);
    const int64_t d = c.n_embd, nb = d / quant::kQK_K;
#pragma omp parallel for schedule(static) num_threads(n_threads)
    for (int64_t r = 0; r < n; ++r) {
      if (add_proj) add_inplace(&x[r * d], &proj[r * d], d);
      rk->rmsnorm(&x[r * d], w, &xn[r * d], d, c.rms_eps);
      if (q8_embd_used) {
        rk->quantize_q8_K(&xn[r * d], q8_embd.data() + r * nb, d);
        qgemm::make_bs32(q8_embd.data() + r * nb, 1, nb, bs_embd.data() + r * nb * 8);
        if (u8_embd_used) qgemm::make_u8(q8_embd.data() + r * nb, 1, nb, u8_embd.data() + r * d);
      }
      q80_embd.make(&xn[r * d], r);
    }
    Activations a;
    a.f32 = xn.data();
    a.n_tokens = n;
    a.n_in = d;
    a.q8k = q8_embd_used ? q8_embd.data() : nullptr;
    a.bs32 = q8_embd_used ? bs_embd.data() : nullptr;
    a.q8u = q8_embd_used && u8_embd_used ? u8_embd.data() : nullptr;
    q80_embd.attach(a);
    return a;
  }

  void check_tokens(std::span<const int32_t> tokens, int64_t n) const {
    if (n <= 0 || n > max_tokens) {
      throw Error("forward: " + std::to_string(n) + " tokens, expected 1.." + std::to_string(max_tokens) +
                  " (max_tokens)");
    }
    const int64_t n_vocab_embd = model.n_vocab_embd();
    for (size_t t = 0; t < tokens.size(); ++t) {
      if (tokens[t] < 0 || tokens[t] >= n_vocab_embd) {
        throw Error("token id " + std::to_string(tokens[t]) + " at position " + std::to_string(t % n) +
                    " is outside the vocabulary [0, " + std::to_string(n_vocab_embd) + ")");
      }
    }
  }

  void check_rows(std::span<const int32_t> rows, int64_t begin, int64_t end) const {
    if (static_cast<int64_t>(rows.size()) > max_tokens) {
      throw Error("forward: " + std::to_string(rows.size()) + " logits rows requested, at most " +
                  std::to_string(max_tokens));
    }
    for (const int32_t r : rows) {
      if (r < begin || r >= end) {
        throw Error("logits row " + std::to_string(r) + " is outside the " +
                    (begin == 0 ? std::string("sequence") : std::string("window")) + " [" +
                    std::to_string(begin) + ", " + std::to_string(end) + ")");
      }
    }
  }

  void forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* logits) {
    const auto n = static_cast<int64_t>(tokens.size());
    check_tokens(tokens, n);
    check_rows(rows, 0, n);
    run(tokens, 1, n, 0, n, rows, logits, nullptr, false);
  }

  void forward_batch(std::span<const int32_t> tokens, int64_t n_seq, std::span<const int32_t> rows,
                     float* logits) {
    if (n_seq < 1 || n_seq > max_batch) {
      throw Error("forward_batch: " + std::to_string(n_seq) + " sequences, expected 1.." +
                  std::to_string(max_batch) + " (max_batch)");
    }
    if (tokens.size() % static_cast<size_t>(n_seq) != 0) {
      throw Error("forward_batch: " + std::to_string(tokens.size()) + " tokens do not split into " +
                  std::to_string(n_seq) + " sequences of one length");
    }
    const auto n = static_cast<int64_t>(tokens.size()) / n_seq;
    check_tokens(tokens, n);
    check_rows(rows, 0, n);
    run(tokens, n_seq, n, 0, n, rows, logits, nullptr, false);
  }

  void forward_window(std::span<const int32_t> tokens, int64_t wb, int64_t we, std::span<const int32_t> rows,
                      float* logits, KvCache& cache, bool refresh) {
    const auto n = static_cast<int64_t>(tokens.size());
    check_tokens(tokens, n);
    const auto n_kv = static_cast<size_t>(c.n_head_kv * c.head_dim);
    if (refresh) {
      check_rows(rows, 0, n);
      const size_t need = layers.size() * static_cast<size_t>(max_tokens) * n_kv;
      if (cache.k.size() != need) {
        cache.k.assign(need, 0.0f);
        cache.v.assign(need, 0.0f);
      }
      cache.n_tokens = 0;  // not valid until the refresh completes
      run(tokens, 1, n, 0, n, rows, logits, &cache, true);
      cache.n_tokens = n;
      return;
    }
    if (cache.n_tokens != n) {
      throw Error("forward_window: the KV cache holds " + std::to_string(cache.n_tokens) +
                  " positions, the canvas has " + std::to_string(n) + ": run a refresh step first");
    }
    if (wb < 0 || we > n || wb >= we) {
      throw Error("forward_window: window [" + std::to_string(wb) + ", " + std::to_string(we) +
                  ") is empty or outside the canvas [0, " + std::to_string(n) + ")");
    }
    check_rows(rows, wb, we);
    run(tokens, 1, n, wb, we, rows, logits, &cache, false);
  }

  /// The layers over positions [wb, we) of n_seq sequences of n tokens (inputs already checked).
  /// Activation row s * m + i is position wb + i of sequence s (m = we - wb). cache == nullptr:
  /// wb = 0, we = n, attention over the fresh K/V of the sequence. refresh: also store K/V of all n
  /// positions. Cached step: fresh window K/V replace the cache slots; attention reads the cache.
  void run(std::span<const int32_t> tokens, int64_t n_seq, int64_t n, int64_t wb, int64_t we,
           std::span<const int32_t> rows, float* logits, KvCache* cache, bool refresh) {
    const int64_t d = c.n_embd, hd = c.head_dim;
    const int64_t n_q = c.n_head * hd, n_kv = c.n_head_kv * hd;
    const int64_t q_ld = n_q + kRowPad, kv_ld = n_kv + kRowPad;  // row strides of q, k, v
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const int64_t m = we - wb;        // positions computed per sequence
    const int64_t n_act = n_seq * m;  // activation rows
    const bool cached_step = cache != nullptr && !refresh;
    const size_t layer_kv = static_cast<size_t>(max_tokens) * static_cast<size_t>(n_kv);
    using PS = Profile::Scope;
    ++prof.forwards;

    // Token embeddings.
    {
      const PS ps(prof, Phase::kEmbed);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < n_act; ++r)
        model.dequantize_row(model.token_embd(), tokens[(r / m) * n + wb + r % m], &x[r * d]);
    }

    for (size_t il = 0; il < layers.size(); ++il) {
      const LayerMatrices& lm = layers[il];
      const model::LayerWeights& lw = model.layers()[il];

      // Attention block (its input pass also adds the previous layer's FFN output).
      const Activations a_in = norm_rows(lw.attn_norm.data(), n_act, il > 0);
      {
        const PS ps(prof, Phase::kGemmQkv);
        matmul(std::array<MatmulJob, 3>{MatmulJob{lm.q.get(), &a_in, q.data(), q_ld},
                                        MatmulJob{lm.k.get(), &a_in, k.data(), kv_ld},
                                        MatmulJob{lm.v.get(), &a_in, v.data(), kv_ld}});
      }
      const bool bias = !lw.attn_q_bias.empty();
      {
        const PS ps(prof, Phase::kBiasRope);
#pragma omp parallel for schedule(static) num_threads(n_threads)
        for (int64_t r = 0; r < n_act; ++r) {
          const int64_t pos = wb + r % m;
          float* qt = &q[r * q_ld];
          float* kt = &k[r * kv_ld];
          if (bias) {
            add_inplace(qt, lw.attn_q_bias.data(), n_q);
            add_inplace(kt, lw.attn_k_bias.data(), n_kv);
            add_inplace(&v[r * kv_ld], lw.attn_v_bias.data(), n_kv);
          }
          rope(qt, c.n_head, hd, rope_table.cos(pos), rope_table.sin(pos), c.rope_mode);
          rope(kt, c.n_head_kv, hd, rope_table.cos(pos), rope_table.sin(pos), c.rope_mode);
        }
      }
      if (cache != nullptr) {
        // Refresh: every position's K/V (m == n); cached step: the window's fresh K/V replace their
        // slots (Fast-dLLM's replace_position), the rest stay as the last refresh left them.
        const PS ps(prof, Phase::kKvCache);
        float* ck = cache->k.data() + il * layer_kv + wb * n_kv;
        float* cv = cache->v.data() + il * layer_kv + wb * n_kv;
        for (int64_t r = 0; r < m; ++r) {
          std::copy_n(&k[r * kv_ld], n_kv, ck + r * n_kv);
          std::copy_n(&v[r * kv_ld], n_kv, cv + r * n_kv);
        }
      }
      {
        const PS ps(prof, Phase::kAttention);
        // One work item per (sequence, query head): all its query rows against every key.
        const int64_t group = c.n_head / c.n_head_kv;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
        for (int64_t item = 0; item < n_seq * c.n_head; ++item) {
          const int64_t s = item / c.n_head, h = item % c.n_head, kvh = h / group;
          const float* ks = cached_step ? cache->k.data() + il * layer_kv : &k[s * m * kv_ld];
          const float* vs = cached_step ? cache->v.data() + il * layer_kv : &v[s * m * kv_ld];
          AttentionHead a;
          a.q = &q[s * m * q_ld + h * hd];
          a.q_stride = q_ld;
          a.n_q = m;
          a.k = ks + kvh * hd;
          a.v = vs + kvh * hd;
          a.kv_stride = cached_step ? n_kv : kv_ld;
          a.n_kv = n;
          a.head_dim = hd;
          a.scale = scale;
          a.out = &att[s * m * n_q + h * hd];
          a.out_stride = n_q;
          a.scratch = att_scratch.data() + static_cast<size_t>(omp_get_thread_num()) * att_scratch_stride;
          rk->attention_head(a);
        }
      }
      const Activations a_att =
          activations(att.data(), n_act, n_q, q8_att, bs_att, u8_att, lm.o->wants_q8k(), q80_att);
      {
        const PS ps(prof, Phase::kGemmO);
        matmul(std::array<MatmulJob, 1>{MatmulJob{lm.o.get(), &a_att, proj.data(), d}});
      }

      // Feed-forward block (its input pass adds the attention output).
      const Activations f_in = norm_rows(lw.ffn_norm.data(), n_act, true);
      {
        const PS ps(prof, Phase::kGemmGateUp);
        matmul(std::array<MatmulJob, 2>{MatmulJob{lm.gate.get(), &f_in, gate.data(), c.n_ff},
                                        MatmulJob{lm.up.get(), &f_in, up.data(), c.n_ff}});
      }
      Activations f_act;
      f_act.f32 = gate.data();
      f_act.n_tokens = n_act;
      f_act.n_in = c.n_ff;
      f_act.q8k = lm.down->wants_q8k() ? q8_ff.data() : nullptr;
      f_act.bs32 = f_act.q8k != nullptr ? bs_ff.data() : nullptr;
      f_act.q8u = u8_ff_used ? u8_ff.data() : nullptr;
      q80_ff.attach(f_act);
      {
        // SiLU * up and its Q8_K rounding in one pass per row (the row is still in L1/L2).
        const PS ps(prof, Phase::kSiluMul);
        const int64_t nb = c.n_ff / quant::kQK_K;
#pragma omp parallel for schedule(static) num_threads(n_threads)
        for (int64_t r = 0; r < n_act; ++r) {
          rk->silu_mul(&gate[r * c.n_ff], &up[r * c.n_ff], &gate[r * c.n_ff], c.n_ff);
          if (f_act.q8k != nullptr) {
            rk->quantize_q8_K(&gate[r * c.n_ff], q8_ff.data() + r * nb, c.n_ff);
            qgemm::make_bs32(q8_ff.data() + r * nb, 1, nb, bs_ff.data() + r * nb * 8);
            if (u8_ff_used) qgemm::make_u8(q8_ff.data() + r * nb, 1, nb, u8_ff.data() + r * c.n_ff);
          }
          q80_ff.make(&gate[r * c.n_ff], r);
        }
      }
      {
        const PS ps(prof, Phase::kGemmDown);
        matmul(std::array<MatmulJob, 1>{MatmulJob{lm.down.get(), &f_act, proj.data(), d}});
      }
    }
    {
      // The last layer's FFN output (earlier layers' were added by the next layer's input pass).
      const PS ps(prof, Phase::kResidual);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t r = 0; r < n_act; ++r) add_inplace(&x[r * d], &proj[r * d], d);
    }

    // Final norm and LM head, only for the requested rows (of every sequence).
    const auto n_rows = static_cast<int64_t>(rows.size());
    if (n_rows == 0) return;
    const int64_t n_head_rows = n_seq * n_rows;
    {
      const PS ps(prof, Phase::kNorm);
#pragma omp parallel for schedule(static) num_threads(n_threads)
      for (int64_t j = 0; j < n_head_rows; ++j) {
        const int64_t r = (j / n_rows) * m + rows[j % n_rows] - wb;
        rk->rmsnorm(&x[r * d], model.output_norm().data(), &xn[j * d], d, c.rms_eps);
      }
    }
    const Activations h_in =
        activations(xn.data(), n_head_rows, d, q8_embd, bs_embd, u8_embd, q8_head_used, q80_embd);
    const PS ps(prof, Phase::kLmHead);
    matmul(std::array<MatmulJob, 1>{MatmulJob{output.get(), &h_in, logits, output->n_out()}});
  }
};

CpuForward::CpuForward(const model::Model& model, const ForwardOptions& options)
    : impl_(std::make_unique<Impl>(model, options)) {}

CpuForward::~CpuForward() = default;

void CpuForward::forward(std::span<const int32_t> tokens, std::span<const int32_t> rows, float* logits) {
  impl_->forward(tokens, rows, logits);
}

void CpuForward::forward_batch(std::span<const int32_t> tokens, int64_t n_seq, std::span<const int32_t> rows,
                               float* logits) {
  impl_->forward_batch(tokens, n_seq, rows, logits);
}

void CpuForward::forward_window(std::span<const int32_t> tokens, int64_t window_begin, int64_t window_end,
                                std::span<const int32_t> rows, float* logits, KvCache& cache, bool refresh) {
  impl_->forward_window(tokens, window_begin, window_end, rows, logits, cache, refresh);
}

int64_t CpuForward::n_vocab() const {
  return impl_->output->n_out();
}
int CpuForward::n_threads() const {
  return impl_->n_threads;
}
int64_t CpuForward::max_tokens() const {
  return impl_->max_tokens;
}
Isa CpuForward::isa() const {
  return impl_->isa;
}
int CpuForward::max_batch() const {
  return impl_->max_batch;
}

}  // namespace dllm::cpu
