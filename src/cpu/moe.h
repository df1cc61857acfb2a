// The mixture-of-experts FFN block on the CPU, for the routing the model's config describes
// (model/config.h: gating, selection bias, groups, shared experts, normalisation, scale). It computes
// what llama.cpp's build_moe_ffn (src/llama-graph.cpp) builds with SiLU experts, for each row h of the
// normalized FFN input (moe_unimplemented names any routing it does not compute, which MoeFfn refuses):
//   p    = softmax(W_r h)                 router W_r: E rows x d (ffn_gate_inp, F32)
//   S    = the k experts of largest p, in descending order (equal p: the lower expert index first)
//   w_e  = p_e (LLaDA-MoE), or p_e / max(sum_{e' in S} p_e', 2^-14) (RND1: norm_w)
//   out  = sum over S, in that order, of w_e * W_down_e (silu(W_gate_e h) * (W_up_e h))
// or with sigmoid gating (LLaDA2, src/models/bailingmoe2.cpp) the scores, selection bias and groups of
// moe_route_row_sigmoid, the weights times expert_weights_scale, and the shared expert's SwiGLU added
// after the routed ones.
// Expert-grouped GEMM: every canvas row is routed first, the (row, expert) pairs are grouped by
// expert, and each expert's gate / up / down runs as one GEMM over only its rows (about n k / E of
// them). Those GEMMs are small, so the work items are (expert, output-row block) pairs, not experts.
// Every output element is written by one work item in a fixed order, and the weighted sum back runs
// per row over its slots in slot order, so the result is bit-identical for any thread count.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cpu/kernels/row_kernels.h"
#include "cpu/matmul.h"
#include "model/config.h"
#include "quant/blocks.h"

namespace dllm::model {
class Model;
struct LayerWeights;
}  // namespace dllm::model

namespace dllm::cpu {

/// Top-k routing of n rows over E experts. Row t's slot j (j < k, by descending probability) goes to
/// expert[t * k + j] with weight[t * k + j]; probs holds the scores (softmax or sigmoid), n x n_expert
/// of the model (a shared expert run as an extra expert has none).
struct MoeRouting {
  int64_t n_rows = 0;
  int64_t n_expert = 0;
  int64_t k = 0;
  std::vector<int32_t> expert;  ///< n_rows x k
  std::vector<float> weight;    ///< n_rows x k
  std::vector<float> probs;     ///< n_rows x n_expert
};

/// Routing of one row x (d values): logits l_e = dot_f32(router + e * d, x) (f32, cpu/ops.h), probs
/// p_e = exp(l_e - max l) * (1 / sum) with the sum in double (ggml_soft_max_f32), then the k largest
/// p_e by repeated selection, the first index winning among equal values: the order ggml's argsort
/// (std::sort with `>`) gives for E <= 16, where libstdc++'s std::sort is an insertion sort and so
/// keeps equal elements in index order; for more experts std::sort's order among exactly equal
/// probabilities is unspecified, and ours stays lower-index-first. weight_j = p of slot j, divided by
/// max(sum of the k weights in f32 (ggml_sum_rows), 6.103515625e-5) when norm (ggml_clamp, ggml_div).
/// probs: E floats out; expert, weight: k values out. Requires 1 <= k <= E. router nullptr: probs
/// holds the logits l_e on entry (moe_router_logits).
void moe_route_row(const float* router, int64_t n_expert, const float* x, int64_t d, int64_t k, bool norm,
                   float* probs, int32_t* expert, float* weight);

/// Routing of one row under sigmoid gating (LLaDA2; llama.cpp build_moe_ffn with
/// LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID, exp_probs_b and n_expert_groups, src/llama-graph.cpp; HF
/// modeling_llada2_moe.py LLaDA2MoeGate computes the same):
///   s_e  = 1 / (1 + exp(-l_e)), l_e = dot_f32(router + e * d, x)      the scores, into scores (E)
///   b_e  = s_e + bias_e (bias: E values, or nullptr for none)        for the choice only, into biased
///   groups (1 < n_groups <= 64; E a multiple of it, >= 2 experts each): group g's score is the sum of its
///   two largest b_e; the n_group_used best groups are kept (equal scores: the lower group first) and the
///   other groups' b_e become -inf (not 0: biased scores may be negative)
///   S    = the k largest b_e, in descending order (equal values: the lower expert index first)
///   w_j  = s of slot j, divided by max(sum of the k, 2^-14) when norm (ggml_clamp), times scale.
/// scores, biased: E floats out; expert, weight: k values out. Requires 1 <= k <= the kept experts.
/// router nullptr: scores holds the logits l_e on entry (moe_router_logits).
void moe_route_row_sigmoid(const float* router, int64_t n_expert, const float* x, int64_t d,
                           const float* bias, int64_t n_groups, int64_t n_group_used, int64_t k, bool norm,
                           float scale, float* scores, float* biased, int32_t* expert, float* weight);

/// logits[t * n_expert + e] = dot_f32(router + e * d, x + t * d, d) for rows t < n: the router logits
/// of the row functions above, bit for bit (rk.dot_f32_x4x4: four experts and four rows at a time; a
/// tile's last 1-3 rows through rk.dot_f32_x4x2 and rk.dot_f32_x4), each router row read once per
/// tile of 32 rows. n_threads split the experts.
void moe_router_logits(const RowKernels& rk, const float* router, int64_t n_expert, const float* x, int64_t n,
                       int64_t d, float* logits, int n_threads);

/// The n x k assignments of a routing, grouped by expert: grouped rows [begin[e], begin[e + 1]) belong
/// to expert e, in increasing (row, slot) order; grouped row i reads activation row src_row[i], and
/// slot (t, j) is grouped row grouped[t * k + j]. A function of the routing only.
struct MoeGroups {
  std::vector<int64_t> begin;    ///< n_expert + 1
  std::vector<int32_t> src_row;  ///< n_rows x k
  std::vector<int32_t> grouped;  ///< n_rows x k
  std::vector<int64_t> cursor;   ///< scratch of moe_group, n_expert
};

/// Counting sort of r's assignments by expert (stable in row-major slot order). Reuses g's storage: no
/// allocation once g has held a routing of this size.
void moe_group(const MoeRouting& r, MoeGroups& g);

/// One layer's experts prepared for an ISA: expert e's gate and up are n_ff_exp x n_embd matrices,
/// its down n_embd x n_ff_exp (model::expert_matrix slices of the 3-D tensors).
struct MoeExperts {
  /// n_expert each, then the shared expert (ffn_*_shexp) when the layer has one: it runs as expert
  /// n_expert, which every row takes with weight 1 after its routed slots (moe.cpp).
  std::vector<std::unique_ptr<Matrix>> gate, up, down;
};

/// Prepares lw's experts with make_matrix (or make_matrix_ref when `reference`), releasing the mapped
/// pages of every expert a matrix copied. Throws dllm::Error as make_matrix does (a type without a
/// matrix kernel, names the slice "blk.N.ffn_up_exps.weight[e]").
MoeExperts make_moe_experts(const model::Model& m, const model::LayerWeights& lw, Isa isa,
                            WeightLayout routed_layout = WeightLayout::kFast, bool reference = false);

/// The layout of c's routed experts: kCompact when a block-diffusion step gives an expert about a row
/// (block_length x n_expert_used / n_expert <= 4; LLaDA2-mini: 32 x 8 / 256 = 1), so the step reads
/// the experts' bytes once for almost no arithmetic; kFast for full-canvas models (LLaDA-MoE at a
/// 141-token canvas: 18 rows per expert).
WeightLayout expert_layout(const model::ModelConfig& c);

/// The passes of MoeFfn::forward, for MoeTimes.
enum class MoePass { kRoute, kGather, kGateUp, kSiluMul, kDown, kCombine, kCount };

/// Time spent in each pass since the last reset (when timing is on): wall seconds and this process's
/// CPU seconds (all threads), and the multiply-adds of the expert GEMMs (gate, up and down over
/// every routed row: n k (2 n_embd n_ff_exp + n_ff_exp n_embd) per forward()), and how the routed rows
/// fell on the experts: expert_count[b] counts the (forward() call, expert) pairs whose row count lies
/// in bucket b of kExpertRowBuckets, expert_rows[b] the routed rows those pairs took (an expert with
/// few rows streams all its weights for little work, so this explains the expert GEMMs' rate).
struct MoeTimes {
  /// Upper bounds (inclusive) of the buckets of rows per expert: 0, 1-2, 3-8, 9-32, 33-128, more.
  static constexpr int64_t kExpertRowBuckets[] = {0, 2, 8, 32, 128, INT64_MAX};
  static constexpr int kBuckets = static_cast<int>(std::size(kExpertRowBuckets));
  double wall_s[static_cast<int>(MoePass::kCount)] = {};
  double cpu_s[static_cast<int>(MoePass::kCount)] = {};
  double expert_macs = 0;
  int64_t expert_count[kBuckets] = {};  ///< (forward() call, expert) pairs per bucket
  int64_t expert_rows[kBuckets] = {};   ///< routed rows those pairs took
  /// Thread seconds (wall time summed over the threads) of the gate/up and down work items of those
  /// experts, and their multiply-adds: where the expert products' time goes by rows per expert.
  double item_s[kBuckets] = {};
  double item_macs[kBuckets] = {};
};

/// What of `c`'s routing the block above does not compute ("a selection bias (exp_probs_b) with
/// softmax gating", "group-limited routing with softmax gating", "shared experts of a width other
/// than the experts'"), or "". Softmax routing is moe_route_row's, sigmoid routing (bias, groups)
/// moe_route_row_sigmoid's; either weight is times expert_weights_scale; a shared expert of the
/// experts' width (LLaDA2: 1 of 512) is added to every row's sum last, as llama.cpp's
/// bailingmoe2.cpp adds ffn_shexp to the routed output.
std::string moe_unimplemented(const model::ModelConfig& c);

/// The block above with its scratch, sized for up to max_rows rows (size_for() grows it; forward()
/// does not allocate). Not reentrant: one forward() at a time per object.
class MoeFfn {
 public:
  /// `layers`: every layer's experts (they decide which activation formats the scratch holds). Throws
  /// dllm::Error "<arch>: the CPU's routed FFN does not implement <what> yet" (moe_unimplemented).
  MoeFfn(const model::ModelConfig& c, const std::vector<MoeExperts>& layers, int64_t max_rows, Isa isa,
         int n_threads);

  /// out[t * ldo + i] = the block's output for row t of x (n rows of n_embd, row stride n_embd: the
  /// normalized FFN input), t < n <= max_rows, i < n_embd. The routing of this call stays readable
  /// through routing() until the next call.
  void forward(const model::LayerWeights& lw, const MoeExperts& ex, const float* x, int64_t n, float* out,
               int64_t ldo);

  /// Scratch for up to max_rows rows (grown, never shrunk).
  void size_for(int64_t max_rows);

  const MoeRouting& routing() const { return routing_; }
  const MoeGroups& groups() const { return groups_; }

  /// Timing of the passes (off by default: one branch per pass). Turning it on resets times().
  void set_timing(bool on) {
    timing_ = on;
    times_ = MoeTimes{};
  }
  /// Stops (false) or resumes (true) the timing that set_timing(true) began, keeping times(): the
  /// passes of a forward pass $DLLM_PROFILE_ROWS leaves out.
  void resume_timing(bool on) { timing_ = on; }
  const MoeTimes& times() const { return times_; }
  /// When timing is on: per pass wall and CPU ms per forward pass (over `forwards` passes) to stderr,
  /// the expert GEMMs' rate, 2 x expert_macs / CPU seconds of gate/up + down (int8 ops per
  /// CPU-second, comparable with qgemm_bench's peak per core) with their multiply-adds per forward
  /// pass, and the rows-per-expert histogram (MoeTimes::expert_count / expert_rows) per forward pass.
  /// Nothing when off or unused.
  void print_times(int64_t forwards) const;

 private:
  /// Activations view of grouped rows [begin, begin + count) of one of the two grouped inputs.
  struct Grouped {
    std::vector<float> f32;              ///< rows x width, only when a float-type matrix reads it
    std::vector<quant::block_q8_K> q8k;  ///< rows x width / 256, when a K-quant matrix reads it
    std::vector<int16_t> bs32;           ///< rows x width / 256 x 8
    std::vector<uint8_t> q8u;            ///< rows x width, when a matrix reads Activations::q8u
    std::vector<quant::block_q8_0> q80;  ///< rows x width / 32, when a Q8_0 matrix reads it
    std::vector<uint8_t> q80u;           ///< rows x width, when one reads Activations::q8_0u
    int64_t width = 0;
    Activations view(const float* f32_rows, int64_t begin, int64_t count) const;
    /// Rounds one f32 row into grouped row i of the quantized forms.
    void quantize(const RowKernels& rk, const float* row, int64_t i);
    /// Copies row `src` of `from` (the same width and forms) into row `dst`, every quantized form.
    void copy_row(const Grouped& from, int64_t src, int64_t dst);
  };

  /// One GEMM work item: output rows [r0, r1) of matrix m over expert `expert`'s grouped rows, into
  /// output buffer `which`.
  struct WorkItem {
    const Matrix* m;
    int32_t expert;
    int32_t which;
    int64_t r0, r1;
  };

  /// Which forms of a grouped input its matrices read (Activations in cpu/matmul.h).
  struct Needs {
    bool q8k = false, q8u = false, q80 = false, q80u = false, f32 = false;
    void add_reader(const Matrix& m);  ///< m reads the input: its forms are needed
  };

  model::ModelConfig c_;
  Needs in_needs_, act_needs_;
  int64_t max_rows_ = 0;
  int n_threads_ = 1;
  const RowKernels* rk_ = nullptr;
  int64_t n_shared_ = 0;       ///< 1 when the shared expert runs as expert n_expert, else 0
  MoeRouting routing_;         ///< n_expert + n_shared_ experts, n_expert_used + n_shared_ slots per row
  std::vector<float> biased_;  ///< sigmoid routing: the biased scores, max_rows x n_expert
  MoeGroups groups_;
  Grouped rows_;                  ///< the FFN input's n rows, quantized once (f32 stays in x)
  Grouped in_;                    ///< the FFN input, gathered in expert order
  Grouped act_;                   ///< silu(gate) * up, the down projection's input (f32 = gate_)
  std::vector<float> gate_, up_;  ///< n x k rows of n_ff_exp
  std::vector<float> down_;       ///< n x k rows of n_embd
  std::vector<int32_t> order_;    ///< experts by decreasing row count
  std::vector<WorkItem> items_;
  bool timing_ = false;
  MoeTimes times_;
};

}  // namespace dllm::cpu
