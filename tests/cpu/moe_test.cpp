// The MoE FFN block (cpu/moe.h) against f64 math written from llama.cpp's build_moe_ffn semantics
// (tests/reference_forward.h, ReferenceForward::moe_ffn): routing (softmax, top-k, the RND1
// renormalisation), ties, the grouping, and the block's output on inputs fed straight into the block,
// where the FFN is all there is to compare (in the final logits of the tiny reference models a
// wrong top-k normalisation moves the median row by only about a point).
#include "cpu/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/isa.h"
#include "cpu/geglu_moe.h"
#include "cpu/kernels/row_kernels.h"
#include "cpu/ops.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "quant/quant.h"
#include "reference_forward.h"
#include "test_util.h"

namespace dllm {
namespace {

using test::ReferenceForward;
using test::SyntheticModel;
using test::SyntheticSpec;
using test::WeightMix;

constexpr Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni};

/// f64 softmax of the router logits of one row.
std::vector<double> softmax_f64(const std::vector<float>& router, const std::vector<float>& x, int64_t E) {
  const int64_t d = static_cast<int64_t>(x.size());
  std::vector<double> p(E, 0.0);
  double mx = -1e300, sum = 0;
  for (int64_t e = 0; e < E; ++e) {
    for (int64_t i = 0; i < d; ++i) p[e] += double(router[e * d + i]) * x[i];
    mx = std::max(mx, p[e]);
  }
  for (double& v : p) sum += (v = std::exp(v - mx));
  for (double& v : p) v /= sum;
  return p;
}

// DiffusionGemma's GELU (ggml_gelu_f32 on the f16 value of x, the result stored as f16, as ggml-cpu's
// ggml_table_gelu_f16): against the tanh formula in f64 on the rounded input, within one f16 step of
// the result plus the f32 formula's cancellation, on a grid across (-10, 10) and at the clamps.
TEST(GeluF16, MatchesTheTanhFormulaOnF16Inputs) {
  for (float x = -10.5f; x <= 10.5f; x += 0.0137f) {
    const float g = cpu::gelu_f16(x);
    if (x <= -10.0f) {
      EXPECT_EQ(g, 0.0f);
      continue;
    }
    if (x >= 10.0f) {
      EXPECT_EQ(g, x);
      continue;
    }
    const double h = quant::fp16_to_fp32(quant::fp32_to_fp16(x));
    const double want = 0.5 * h * (1.0 + std::tanh(0.7978845608028654 * h * (1.0 + 0.044715 * h * h)));
    // An f16 step at want, plus what f32 loses in 1 + tanh(z) near z = -1 (two roundings of about 1,
    // times 0.5 h): ggml's formula, which the table holds, cancels there for negative x.
    const double tol = std::max(std::abs(want) * 0x1p-10, 0x1p-24) + std::abs(h) * 0x1p-23;
    EXPECT_NEAR(g, want, tol) << "x=" << x;
    EXPECT_EQ(g, quant::fp16_to_fp32(quant::fp32_to_fp16(g))) << "not an f16 value: x=" << x;
  }
}

TEST(MoeRoute, MatchesF64SoftmaxTopKAndWeights) {
  for (const int64_t E : {8, 64, 128}) {
    for (const bool norm : {false, true}) {
      const int64_t d = 256, k = 8 < E ? 8 : 2;
      const auto router = test::random_vector(E * d, 1 + E, 0.3f);
      int checked = 0;
      for (uint32_t row = 0; row < 50; ++row) {
        const auto x = test::random_vector(d, 100 + row);
        std::vector<float> probs(E), weight(k);
        std::vector<int32_t> expert(k);
        cpu::moe_route_row(router.data(), E, x.data(), d, k, norm, probs.data(), expert.data(),
                           weight.data());
        const auto p = softmax_f64(router, x, E);
        // Worst-case f32 bound: a logit's dot product of d terms is off by at most (d + 2) u sum |r x|
        // (u = 2^-24); exp turns a logit error into the same relative error of p_e, and the normalising
        // sum adds at most the largest logit error plus a few u.
        const double u = std::ldexp(1.0, -24);
        std::vector<double> bl(E, 0.0);
        double bl_max = 0;
        for (int64_t e = 0; e < E; ++e) {
          for (int64_t i = 0; i < d; ++i) bl[e] += std::fabs(double(router[e * d + i]) * x[i]);
          bl[e] *= (d + 2) * u;
          bl_max = std::max(bl_max, bl[e]);
        }
        for (int64_t e = 0; e < E; ++e)
          EXPECT_NEAR(probs[e], p[e], p[e] * (bl[e] + bl_max + 8 * u)) << E << " " << e;
        std::vector<int> idx(E);
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return p[a] > p[b]; });
        // Only rows whose k-th and (k+1)-th probabilities are clearly apart: elsewhere f32 and f64 may
        // legitimately pick different experts.
        if (p[idx[k - 1]] - p[idx[k]] < 1e-5 * p[idx[k - 1]]) continue;
        ++checked;
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += p[idx[j]];
        for (int64_t j = 0; j < k; ++j) {
          EXPECT_EQ(expert[j], idx[j]) << "E " << E << " row " << row << " slot " << j;
          const double want = norm ? p[idx[j]] / sum : p[idx[j]];
          // The probability's bound (above), twice with the renormalisation (its sum's error too).
          EXPECT_NEAR(weight[j], want, want * (norm ? 2 : 1) * (2 * bl_max + 16 * u))
              << "E " << E << " norm " << norm;
        }
        if (norm) {
          EXPECT_NEAR(std::accumulate(weight.begin(), weight.end(), 0.0), 1.0, 1e-6);
        }
      }
      EXPECT_GE(checked, 40) << "E " << E;
    }
  }
}

TEST(MoeRoute, TiesKeepIndexOrderAsGgmlArgsort) {
  // ggml's argsort (ggml-cpu ops.cpp, std::sort of the indices with data[a] > data[b]) on E <= 16
  // values: libstdc++'s std::sort finishes ranges of at most 16 with an insertion sort, which keeps
  // equal values in index order. Rows with many exact ties: router rows that repeat, so whole groups of
  // experts get bit-identical logits and probabilities.
  const int64_t d = 64;
  for (const int64_t E : {4, 8, 16}) {
    std::mt19937 rng(static_cast<uint32_t>(E));
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> base = test::random_vector(4 * d, 7 + trial, 0.5f);
      std::vector<float> router(E * d);
      std::uniform_int_distribution<int> pick(0, 3);
      for (int64_t e = 0; e < E; ++e) {
        const int src = pick(rng);
        std::copy_n(base.begin() + src * d, d, router.begin() + e * d);
      }
      const auto x = test::random_vector(d, 500 + trial);
      for (const int64_t k : {int64_t{1}, int64_t{2}, E / 2, E}) {
        std::vector<float> probs(E), weight(k);
        std::vector<int32_t> expert(k);
        cpu::moe_route_row(router.data(), E, x.data(), d, k, false, probs.data(), expert.data(),
                           weight.data());
        std::vector<int32_t> sorted(E);
        std::iota(sorted.begin(), sorted.end(), 0);
        std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
        for (int64_t j = 0; j < k; ++j)
          EXPECT_EQ(expert[j], sorted[j]) << "E " << E << " k " << k << " j " << j;
      }
    }
  }
}

TEST(MoeGroup, CountingSortIsStableAndInvertible) {
  cpu::MoeRouting r;
  r.n_rows = 5;
  r.n_expert = 4;
  r.k = 2;
  r.expert = {3, 1, 1, 0, 3, 1, 2, 3, 1, 0};
  r.weight.assign(10, 0.5f);
  cpu::MoeGroups g;
  cpu::moe_group(r, g);
  EXPECT_EQ(g.begin, (std::vector<int64_t>{0, 2, 6, 7, 10}));
  // Expert 1 owns slots (0,1), (1,0), (2,1), (4,0): rows 0, 1, 2, 4 in that order.
  EXPECT_EQ(std::vector<int32_t>(g.src_row.begin() + 2, g.src_row.begin() + 6),
            (std::vector<int32_t>{0, 1, 2, 4}));
  for (int64_t s = 0; s < 10; ++s) {
    const int32_t i = g.grouped[s];
    EXPECT_EQ(g.src_row[i], s / 2);
    EXPECT_GE(i, g.begin[r.expert[s]]);
    EXPECT_LT(i, g.begin[r.expert[s] + 1]);
  }
}

struct BlockCase {
  std::string name;
  std::string arch;
  WeightMix mix;
  bool q8_0_experts = false;  ///< every expert tensor Q8_0 (a Q8_0 file's experts)
};

void PrintTo(const BlockCase& c, std::ostream* os) {
  *os << c.name;
}

SyntheticSpec block_spec(const BlockCase& c) {
  SyntheticSpec s;
  s.arch = c.arch;
  s.mix = c.mix;
  s.n_layer = 2;
  s.n_embd = 256;
  s.n_expert = 8;
  s.n_expert_used = 3;
  s.n_ff_exp = c.mix == WeightMix::kQ4KM ? 256 : 96;
  if (c.mix != WeightMix::kQ4KM) s.n_embd = 160;  // odd sizes for the float matrices
  s.expert_std = 0.2;
  // Logits of spread ~1 (input rows of RMS 1): a flat routing, so the selected experts' probabilities
  // sum far from 1 and the two weight rules differ by tens of percent.
  s.router_std = 1.0 / std::sqrt(double(s.n_embd));
  if (c.arch == "rnd1") {
    s.n_head_kv = 2;
    s.head_dim = 64;
  }
  if (c.q8_0_experts) {
    for (int64_t i = 0; i < s.n_layer; ++i) {
      for (const char* t : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"})
        s.type_override["blk." + std::to_string(i) + "." + t + ".weight"] = gguf::GgmlType::Q8_0;
    }
  }
  return s;
}

/// A synthetic model of `spec` written to a temporary file and loaded (the members in the order they
/// must live: the model points into the file's mapping).
struct BlockModel {
  explicit BlockModel(const SyntheticSpec& spec)
      : synth(test::write_synthetic_model(spec, (dir / "m.gguf").string())),
        file(gguf::GgufFile::open((dir / "m.gguf").string())),
        model(model::Model::load(file)) {}
  test::TempDir dir;
  SyntheticModel synth;
  gguf::GgufFile file;
  model::Model model;
};

class MoeBlock : public ::testing::TestWithParam<BlockCase> {};

// The block's output for normalized input rows against ReferenceForward::moe_ffn (f64, with the Q8_K
// rounding of every quantized matrix's input that ggml-cpu and our kernels apply).
TEST_P(MoeBlock, MatchesF64Reference) {
  const BlockCase c = GetParam();
  const SyntheticSpec spec = block_spec(c);
  const BlockModel bm(spec);
  const SyntheticModel& synth = bm.synth;
  const model::Model& model = bm.model;
  ASSERT_TRUE(model.config().is_moe());
  EXPECT_EQ(model.config().expert_weights_norm, c.arch == "rnd1");
  const ReferenceForward ref{.m = synth, .neox = true, .q8k_inputs = true};

  const int64_t n = 37, d = spec.n_embd;
  std::vector<float> x(n * d);
  for (int64_t t = 0; t < n; ++t) {
    // RMS 1 rows, as after the FFN's RMSNorm (times weights near 1).
    const auto row = test::random_vector(d, 900 + t);
    std::copy(row.begin(), row.end(), x.begin() + t * d);
  }
  const int layer = 1;
  std::vector<ReferenceForward::MoeRow> want(n);
  for (int64_t t = 0; t < n; ++t)
    want[t] = ref.moe_ffn(layer, std::vector<double>(x.begin() + t * d, x.begin() + (t + 1) * d));

  for (const Isa isa : kIsas) {
    if (!isa_supported(isa)) {
      std::printf("[skipped] %s: this CPU cannot run %s\n", c.name.c_str(), isa_name(isa));
      continue;
    }
    std::vector<cpu::MoeExperts> experts;
    for (const auto& lw : model.layers()) experts.push_back(cpu::make_moe_experts(model, lw, isa));
    std::vector<std::vector<float>> outs;
    for (const int threads : {1, 2}) {
      cpu::MoeFfn block(model.config(), experts, n, isa, threads);
      std::vector<float> out(n * d + 5, -7.0f);  // ldo = d: nothing past n rows is written
      block.forward(model.layers()[layer], experts[layer], x.data(), n, out.data(), d);
      EXPECT_EQ(out[n * d], -7.0f);
      outs.push_back(out);

      double worst = 0;
      std::vector<double> rel;
      int compared = 0;
      for (int64_t t = 0; t < n; ++t) {
        const auto& w = want[t];
        // The routing first: the same experts in the same order (rows with a near tie at the k-th
        // place excepted), weights within f32 rounding.
        std::vector<double> sorted = w.probs;
        std::sort(sorted.rbegin(), sorted.rend());
        const int64_t k = spec.n_expert_used;
        if (sorted[k - 1] - sorted[k] < 1e-5) continue;
        ++compared;
        for (int64_t j = 0; j < k; ++j) {
          EXPECT_EQ(block.routing().expert[t * k + j], w.experts[j]) << "row " << t << " slot " << j;
          EXPECT_NEAR(block.routing().weight[t * k + j], w.weights[j], 1e-5 * w.weights[j]) << "row " << t;
        }
        double diff = 0, norm = 0;
        for (int64_t i = 0; i < d; ++i) {
          diff += (out[t * d + i] - w.out[i]) * (out[t * d + i] - w.out[i]);
          norm += w.out[i] * w.out[i];
        }
        worst = std::max(worst, std::sqrt(diff / norm));
        rel.push_back(std::sqrt(diff / norm));
      }
      EXPECT_GE(compared, n - 3);
      // Bounds. The kernels' f32 arithmetic keeps a row within a few 1e-7 of the f64 block. A row may
      // also hold a down-projection input whose Q8_K rounding fell on the other side of a tie from the
      // reference's (our f32 silu(gate) * up and the f64 one differ in the last bits; a ~1e-5 chance
      // per value, some 30k values here): one quantization step of one of 256 inputs, ~1e-3 of that
      // row. So the median row must be tight and the worst row within the one-step size.
      std::sort(rel.begin(), rel.end());
      const double median = rel[rel.size() / 2];
      const double median_bound = 1e-5, bound = 2e-3;
      std::printf(
          "[figures] %s (%s, %d threads): block vs f64, row rel RMS median %.2e (bound %.0e), max "
          "%.2e (bound %.0e)\n",
          c.name.c_str(), isa_name(isa), threads, median, median_bound, worst, bound);
      EXPECT_LE(median, median_bound) << isa_name(isa);
      EXPECT_LE(worst, bound) << isa_name(isa);

      // Control: the other top-k weight rule (renormalised for LLaDA-MoE, raw for RND1) scales each
      // row's output by 1 / sum or sum of its selected probabilities, far outside the bound.
      double worst_other = 0;
      for (int64_t t = 0; t < n; ++t) {
        const auto& w = want[t];
        double raw = 0;
        for (const int e : w.experts) raw += w.probs[e];
        const double scale = c.arch == "rnd1" ? raw : 1.0 / raw;
        double diff = 0, nrm = 0;
        for (int64_t i = 0; i < d; ++i) {
          const double o = w.out[i] * scale;
          diff += (out[t * d + i] - o) * (out[t * d + i] - o);
          nrm += o * o;
        }
        worst_other = std::max(worst_other, std::sqrt(diff / nrm));
      }
      std::printf("[figures] %s (%s): the other weight rule is %.2f off\n", c.name.c_str(), isa_name(isa),
                  worst_other);
      EXPECT_GT(worst_other, 10 * bound) << "the other top-k weight rule is not told apart";
    }
    // Bit-identical at 1 and 2 threads.
    EXPECT_EQ(std::memcmp(outs[0].data(), outs[1].data(), outs[0].size() * sizeof(float)), 0)
        << isa_name(isa);
  }
}

// The profile's histogram of rows per expert (MoeTimes::expert_count / expert_rows) against the
// f64 reference's routing of the same rows, bucketed here by hand: every expert of every pass in one
// bucket, every routed row (n k per pass) counted once.
TEST(MoeTimes, RowsPerExpertHistogramFollowsTheRouting) {
  const BlockCase c{"llada_moe_q4km", "llada-moe", WeightMix::kQ4KM};
  const SyntheticSpec spec = block_spec(c);
  const BlockModel bm(spec);
  const SyntheticModel& synth = bm.synth;
  const model::Model& model = bm.model;
  const ReferenceForward ref{.m = synth, .neox = true, .q8k_inputs = true};
  // 32 copies of one row and 2 of another: their experts get 32 and 2 rows (34 where they share
  // one), the rest none, so counts fall on the buckets' edges.
  const int64_t n = 34, d = spec.n_embd, E = spec.n_expert, k = spec.n_expert_used;
  std::vector<float> x(n * d);
  for (int64_t t = 0; t < n; ++t) {
    const auto row = test::random_vector(d, t < 32 ? 900 : 901);
    std::copy(row.begin(), row.end(), x.begin() + t * d);
  }
  const int layer = 1;
  std::vector<int64_t> rows(E, 0);
  for (int64_t t = 0; t < n; ++t) {
    const auto w = ref.moe_ffn(layer, std::vector<double>(x.begin() + t * d, x.begin() + (t + 1) * d));
    for (const int e : w.experts) ++rows[e];
  }
  // Buckets 0, 1-2, 3-8, 9-32, 33-128, >128 (moe.h), two forward passes.
  const int64_t upper[] = {0, 2, 8, 32, 128};
  int64_t want_count[6] = {}, want_rows[6] = {};
  for (const int64_t r : rows) {
    int b = 0;
    while (b < 5 && r > upper[b]) ++b;
    want_count[b] += 2;
    want_rows[b] += 2 * r;
  }

  std::vector<cpu::MoeExperts> experts;
  for (const auto& lw : model.layers()) experts.push_back(cpu::make_moe_experts(model, lw, Isa::kScalar));
  cpu::MoeFfn block(model.config(), experts, n, Isa::kScalar, 1);
  block.set_timing(true);
  std::vector<float> out(n * d);
  for (int pass = 0; pass < 2; ++pass)
    block.forward(model.layers()[layer], experts[layer], x.data(), n, out.data(), d);
  ASSERT_EQ(cpu::MoeTimes::kBuckets, 6);
  int64_t total_rows = 0;
  for (int b = 0; b < 6; ++b) {
    EXPECT_EQ(block.times().expert_count[b], want_count[b]) << "bucket " << b;
    EXPECT_EQ(block.times().expert_rows[b], want_rows[b]) << "bucket " << b;
    total_rows += block.times().expert_rows[b];
  }
  EXPECT_EQ(total_rows, 2 * n * k);
  EXPECT_GT(want_count[0], 0) << "the inputs no longer leave an expert without rows";
}

INSTANTIATE_TEST_SUITE_P(Blocks, MoeBlock,
                         ::testing::Values(BlockCase{"llada_moe_q4km", "llada-moe", WeightMix::kQ4KM},
                                           BlockCase{"rnd1_q4km", "rnd1", WeightMix::kQ4KM},
                                           BlockCase{"llada_moe_q8_0", "llada-moe", WeightMix::kQ4KM, true},
                                           BlockCase{"llada_moe_f32", "llada-moe", WeightMix::kF32},
                                           BlockCase{"rnd1_float_mix", "rnd1", WeightMix::kFloatMix}),
                         [](const auto& info) { return info.param.name; });

// moe_router_logits equals dot_f32 bit for bit on every row-kernel path this CPU has (the router's
// logits choose the experts): 22 experts (5 groups of 4 and 2 left), rows of 99 (a tail of 3), 71
// rows (tiles of 32, 32 and 7: rows four at a time, then a pair and an odd last row alone), 1 and 2
// threads.
TEST(RouterLogits, EqualDotF32OnEveryPath) {
  const int64_t E = 22, d = 99, n = 71;
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  std::vector<float> router(size_t(E * d)), x(size_t(n * d));
  for (float& v : router) v = g(rng);
  for (float& v : x) v = g(rng);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512Vnni}) {
    if (!isa_supported(isa)) continue;
    for (int threads : {1, 2}) {
      std::vector<float> logits(size_t(n * E), 0.0f);
      cpu::moe_router_logits(cpu::row_kernels(isa), router.data(), E, x.data(), n, d, logits.data(), threads);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t e = 0; e < E; ++e)
          ASSERT_EQ(logits[size_t(t * E + e)], cpu::dot_f32(&router[size_t(e * d)], &x[size_t(t * d)], d))
              << isa_name(isa) << " row " << t << " expert " << e;
    }
  }
}

// expert_layout's rule worked by hand: rows an expert sees per block-diffusion step =
// block_length x n_expert_used / n_expert.
TEST(ExpertLayout, CompactOnlyWhenABlockStepGivesAnExpertAFewRows) {
  model::ModelConfig c;
  c.n_expert = 256, c.n_expert_used = 8, c.block_length = 32;  // LLaDA2-mini: 1 row
  EXPECT_EQ(cpu::expert_layout(c), cpu::WeightLayout::kCompact);
  c.n_expert = 64;  // 4 rows
  EXPECT_EQ(cpu::expert_layout(c), cpu::WeightLayout::kCompact);
  c.n_expert = 32;  // 8 rows
  EXPECT_EQ(cpu::expert_layout(c), cpu::WeightLayout::kFast);
  c.n_expert = 256, c.block_length = 0;  // a full-canvas model (LLaDA-MoE, RND1)
  EXPECT_EQ(cpu::expert_layout(c), cpu::WeightLayout::kFast);
}

}  // namespace
}  // namespace dllm
