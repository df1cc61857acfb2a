// panel_gemm (cpu/panel_gemm.h) on every path this CPU runs, against the formula in f64: C0[i][j] +
// sum over the ids of A[i][id] * f16(B[id][j]), with f16() from quant::fp32_to_fp16 and A's entries
// binary16 values (panel_gemm's precondition). The f32
// result must lie within the bound of a sum of k + 1 terms accumulated in f32 (Higham, Accuracy and
// Stability of Numerical Algorithms, 2nd ed., (3.5): |error| <= gamma_{k+1} * sum of |terms|,
// gamma_n = n u / (1 - n u), u = 2^-24), which is far below the error of skipping the f16 rounding of
// an operand (2^-11 relative) at the k used here. Shapes: m not a multiple of any path's tile rows,
// n not a multiple of its columns, ids with gaps and more than one panel.
#include "cpu/panel_gemm.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/isa.h"
#include "cpu/kernels/panel_gemm_kernels.h"
#include "quant/quant.h"

namespace dllm::cpu {
namespace {

using dllm::test::random_vector;

double f16(float x) {
  return quant::fp16_to_fp32(quant::fp32_to_fp16(x));
}

struct Case {
  int64_t m, n, n_vocab;
  int skip_every;        ///< ids v with v % skip_every == 1 are not summed (0: none skipped)
  bool swapped = false;  ///< ids 4i + 1 and 4i + 2 summed in swapped order (a panel's ends stay put)
};

class PanelGemmIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU cannot run " << isa_name(GetParam());
    if (GetParam() == Isa::kAmx && !amx_bf16_supported()) GTEST_SKIP() << "this CPU/OS lacks AMX-BF16";
  }

  /// Runs panel_gemm on random operands of `cs` with `threads` threads; returns C, and checks it
  /// against the f64 formula.
  std::vector<float> run_and_check(const Case& cs, int threads, uint32_t seed) {
    const int64_t m = cs.m, n = cs.n, V = cs.n_vocab, lda = V + 3, ldc = n + 5;
    // A: probability-like binary16 values (positive, spread over 2^-20 .. 1, subnormal halves among
    // them) and some exact zeros; B: signed, of an embedding's scale, most not f16 values; C0: not
    // zero (the product is added to it).
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    std::vector<float> a(static_cast<size_t>(m * lda));
    for (float& x : a)
      x = u01(rng) < 0.1f ? 0.0f
                          : static_cast<float>(f16(std::ldexp(u01(rng), -static_cast<int>(u01(rng) * 20))));
    const std::vector<float> b = random_vector(static_cast<size_t>(V * n), seed + 1, 0.05f);
    std::vector<float> c = random_vector(static_cast<size_t>(m * ldc), seed + 2, 0.5f);
    const std::vector<float> c0 = c;
    std::vector<int32_t> ids;
    for (int32_t v = 0; v < V; ++v)
      if (cs.skip_every == 0 || v % cs.skip_every != 1) ids.push_back(v);
    if (cs.swapped)
      for (size_t i = 0; i + 2 < ids.size(); i += 4) std::swap(ids[i + 1], ids[i + 2]);

    PanelGemm g;
    g.a = a.data();
    g.lda = lda;
    g.m = m;
    g.ids = ids.data();
    g.k = static_cast<int64_t>(ids.size());
    g.n = n;
    g.b_row = [&](int64_t id, int64_t j0, int64_t j1, float* dst) {
      ASSERT_TRUE(j0 % 16 == 0 && j0 < j1 && j1 <= n) << "columns [" << j0 << ", " << j1 << ") of " << n;
      std::memcpy(dst, &b[id * n + j0], (j1 - j0) * sizeof(float));
    };
    g.c = c.data();
    g.ldc = ldc;
    panel_gemm(GetParam(), g, threads);

    // The tile path sums four exact products per id (panel_gemm_amx.cpp): 4 k + 1 terms.
    const double per_id = GetParam() == Isa::kAmx ? 4.0 : 1.0;
    const double u = std::ldexp(1.0, -24), terms = per_id * static_cast<double>(ids.size()) + 1;
    const double gamma = terms * u / (1 - terms * u);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = c[i * ldc + j];
        if (j >= n) {  // past the columns: untouched
          EXPECT_EQ(got, c0[i * ldc + j]) << "row " << i << " column " << j << " past n = " << n;
          continue;
        }
        double want = c0[i * ldc + j], mag = std::fabs(want);
        for (int32_t v : ids) {
          const double t = f16(a[i * lda + v]) * f16(b[v * n + j]);
          want += t;
          mag += std::fabs(t);
        }
        if (std::fabs(got - want) > gamma * mag && ++bad <= 5)
          ADD_FAILURE() << "m=" << m << " n=" << n << " k=" << ids.size() << ": C[" << i << "][" << j
                        << "] = " << got << ", want " << want << " (bound " << gamma * mag << ")";
      }
    }
    EXPECT_EQ(bad, 0) << "elements outside the bound";
    return c;
  }
};

TEST_P(PanelGemmIsa, MatchesF64FormulaOnOddShapes) {
  const PanelGemmKernels& kn = panel_gemm_kernels(GetParam());
  // m: below one tile, one tile plus a few rows; n: below one strip, strips plus a tail, more column
  // blocks than threads; ids: one partial panel, several panels consecutive (A read in place), with
  // every 7th id skipped, and not in increasing order though each panel spans as many ids as it holds
  // (A gathered in both).
  for (const Case& cs :
       {Case{1, 1, 5, 0}, Case{kn.mr - 1, kn.nr + 3, 40, 3}, Case{2 * kn.mr + 3, 3 * kn.nr + 5, 700, 7},
        Case{37, 2 * kn.nr, 3 * 256 + 11, 0}, Case{kn.mr + 1, 2 * kBlockCols + 40, 300, 0},
        Case{kn.mr, kn.nr + 7, 2 * 256 + 9, 0, true}}) {
    SCOPED_TRACE("m=" + std::to_string(cs.m) + " n=" + std::to_string(cs.n) +
                 " V=" + std::to_string(cs.n_vocab));
    run_and_check(cs, 2, 11);
  }
}

TEST_P(PanelGemmIsa, SameBitsForAnyThreadCount) {
  const Case cs{29, 101, 600, 5};
  const std::vector<float> one = run_and_check(cs, 1, 21);
  // Largest first: LLVM 14's libomp keeps a multi-thread team's old structures when a later region
  // asks for more threads, and LeakSanitizer (scripts/sanitize.sh) reports them as leaks.
  for (int threads : {5, 3, 2}) {
    const std::vector<float> many = run_and_check(cs, threads, 21);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0) << threads << " threads";
  }
}

TEST_P(PanelGemmIsa, RoundF16MatchesQuant) {
  // Normal, subnormal, tie and out-of-range values against quant::fp32_to_fp16.
  std::vector<float> x = random_vector(1000 + 7, 5, 3.0f);
  x[0] = 65504.0f;
  x[1] = 65520.0f;                          // rounds to inf
  x[2] = std::ldexp(1.0f, -24);             // smallest subnormal half
  x[3] = std::ldexp(1.5f, -25);             // rounds up to 2^-24
  x[4] = std::ldexp(1.0f, -25);             // tie between 0 and 2^-24: to even, 0
  x[5] = 1.0f + std::ldexp(1.0f, -11);      // tie between 1 and 1 + 2^-10: to even, 1
  x[6] = 1.0f + 3 * std::ldexp(1.0f, -11);  // tie: to even, 1 + 2^-9
  std::vector<float> got = x;
  panel_gemm_kernels(GetParam()).round_f16(got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(got[i], static_cast<float>(f16(x[i]))) << "x[" << i << "] = " << x[i];
}

INSTANTIATE_TEST_SUITE_P(Paths, PanelGemmIsa,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni,
                                           Isa::kAmx),
                         [](const ::testing::TestParamInfo<Isa>& info) { return isa_name(info.param); });

}  // namespace
}  // namespace dllm::cpu
