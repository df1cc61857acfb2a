// Gemma-4's routed experts on the CPU (model::FfnKind::kGegluDenseMoe, the routed half), as llama.cpp's
// gemma4-common.h 88-106 and build_moe_ffn (src/llama-graph.cpp) compute them, for each row a of the
// residual stream after attention:
//   r    = RMSNorm(a) / sqrt(n_embd) * ffn_gate_inp.scale        the router input (f32)
//   p    = softmax(W_r r); S = the k largest p; w_j = p_j / max(sum_S p, 2^-14)   (cpu/moe.h moe_route_row)
//   m    = RMSNorm(a) * pre_ffw_norm_2
//   [g | u] = W_gate_up_e m                                      fused ffn_gate_up_exps, rows [gate | up]
//   out  = sum over S, in slot order, of (W_down_e (gelu(g) * u) * ffn_down_exps.scale[e]) * w_j
// with GELU the tanh form read from an f16 table as ggml-cpu evaluates it (gelu_f16). Rows are grouped
// by expert and each expert's matrices run over its rows only; each output element is written by one
// work item in a fixed order, so the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/kernels/row_kernels.h"
#include "cpu/matmul.h"
#include "cpu/moe.h"
#include "cpu/projection_input.h"
#include "model/config.h"

namespace dllm::model {
class Model;
struct LayerWeights;
}  // namespace dllm::model

namespace dllm::cpu {

/// One layer's experts prepared for an ISA: expert e's gate|up (2 n_ff_exp x n_embd) and down
/// (n_embd x n_ff_exp) matrices (model::expert_matrix slices).
struct GegluExperts {
  std::vector<std::unique_ptr<Matrix>> gate_up, down;
};

/// Prepares lw's experts (ffn_gate_up_exps, ffn_down_exps) with make_matrix in `layout` (the forward
/// pass passes expert_layout(config), as for the other MoE blocks), releasing the mapped pages a
/// matrix copied. Throws dllm::Error as make_matrix does.
GegluExperts make_geglu_experts(const model::Model& m, const model::LayerWeights& lw, Isa isa,
                                WeightLayout layout = WeightLayout::kFast);

class GegluMoe {
 public:
  /// `layers`: every routed layer's experts (their types decide the activation forms).
  GegluMoe(const model::ModelConfig& c, const std::vector<GegluExperts>& layers, Isa isa, int n_threads);
  /// Scratch for up to `rows` rows (grown, never shrunk).
  void size_for(int64_t rows);
  /// out (n rows of n_embd) = the routed half above for the n rows of a (row stride n_embd).
  void forward(const model::LayerWeights& lw, const GegluExperts& ex, const float* a, int64_t n, float* out);

 private:
  model::ModelConfig c_;
  const RowKernels* rk_;
  int n_threads_;
  std::vector<const Matrix*> gate_up_users_, down_users_;
  int64_t rows_cap_ = 0;
  MoeRouting routing_;
  MoeGroups groups_;
  std::vector<float> m_;          ///< n x n_embd: RMSNorm(a) * pre_ffw_norm_2
  std::vector<float> router_in_;  ///< n x n_embd: RMSNorm(a) / sqrt(n_embd) * ffn_gate_inp.scale
  ProjectionInput in_;            ///< n k rows: m gathered in expert order
  std::vector<float> gu_;         ///< n k rows of 2 n_ff_exp
  ProjectionInput act_;           ///< n k rows of n_ff_exp: gelu(g) * u
  std::vector<float> down_;       ///< n k rows of n_embd
  std::vector<float> ones_;       ///< n_embd ones: RMSNorm without a weight
};

}  // namespace dllm::cpu
