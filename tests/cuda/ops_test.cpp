// Each GPU row kernel (src/cuda/ops.cu) against the CPU function it replaces: the weight decoders of
// src/quant, cpu::rmsnorm, cpu::silu_mul, cpu::rope, cpu::attention, and the Q8_K rounding written
// here from its definition (ggml quantize_row_q8_K_ref, as tests/cpu/forward_test.cpp writes it).
// Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cpu/ops.h"
#include "cuda/kernels.h"
#include "forward/mask.h"
#include "gpu_test_util.h"
#include "model/rope_table.h"
#include "model/synthetic_model.h"
#include "quant/quant.h"

namespace dllm {
namespace {

using cuda::kern::WType;
using test::DeviceArray;

std::vector<float> random_floats(size_t n, float stddev, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

float half_to_float(uint16_t h) {
  return quant::fp16_to_fp32(h);
}

/// The Q8_K rounding of one row (n a multiple of 32; a last block shorter than 256 is its own
/// block), written from ggml's definition: per block, max = the signed value of largest |x| (first
/// on ties), iscale = -127 / max, q = round-half-even(iscale * x) clamped to 127, d = 1 / iscale.
void q8k_reference(const float* x, int64_t n, std::vector<int8_t>& q, std::vector<float>& d_per_value) {
  q.assign(n, 0);
  d_per_value.assign(n, 0.0f);
  for (int64_t b = 0; b < n; b += 256) {
    const int64_t e = std::min<int64_t>(n, b + 256);
    float amax = 0, max = 0;
    for (int64_t i = b; i < e; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    if (amax == 0) continue;
    const float iscale = -127.0f / max;
    for (int64_t i = b; i < e; ++i) {
      q[i] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(iscale * x[i]))));
      d_per_value[i] = 1.0f / iscale;
    }
  }
}

/// Checks the int8 output of a row kernel (q, ds for n_rows x n) against q8k_reference of `y`
/// (n_rows x n, what the kernel should have quantized), and the f16 copy against y or d * q.
void expect_quantized(const std::vector<float>& y, int64_t n_rows, int64_t n, const std::vector<int8_t>& q,
                      const std::vector<float>& ds, const std::vector<uint16_t>& y16, bool f16_q8) {
  int bad_q = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    std::vector<int8_t> qr;
    std::vector<float> dr;
    q8k_reference(&y[r * n], n, qr, dr);
    for (int64_t i = 0; i < n; ++i) {
      // A value within 1e-6 of a rounding tie may go either way after the kernel's own arithmetic.
      if (q[r * n + i] != qr[i]) {
        const float s = y[r * n + i] / dr[i];
        if (std::fabs(std::fabs(s - std::trunc(s)) - 0.5f) > 1e-4f || std::abs(q[r * n + i] - qr[i]) > 1)
          ++bad_q;
      }
    }
    for (int64_t g = 0; g < n / 32; ++g) {
      int sum = 0;
      for (int l = 0; l < 32; ++l) sum += q[r * n + 32 * g + l];
      const float d = ds[2 * (r * (n / 32) + g)];
      EXPECT_NEAR(d, dr[32 * g], 1e-6f * std::fabs(dr[32 * g])) << "row " << r << " group " << g;
      EXPECT_NEAR(ds[2 * (r * (n / 32) + g) + 1], d * sum, 1e-6f * std::fabs(d * sum) + 1e-30f);
    }
    for (int64_t i = 0; i < n; ++i) {
      const float want = f16_q8 ? dr[i] * qr[i] : y[r * n + i];
      const float got = half_to_float(y16[r * n + i]);
      // f16 rounding (2^-11 relative) plus, with f16_q8, one int8 step where a tie went the other way.
      const float tol = 1e-3f * std::fabs(want) + (f16_q8 ? 1.01f * std::fabs(dr[i]) : 1e-6f);
      EXPECT_NEAR(got, want, tol) << "row " << r << " value " << i;
    }
  }
  EXPECT_EQ(bad_q, 0) << "int8 values that differ from the Q8_K rounding away from a tie";
}

// ---------------------------------------------------------------------------------------------

struct DequantCase {
  gguf::GgmlType type;
  WType wtype;
};

class DequantRows : public ::testing::TestWithParam<DequantCase> {};

TEST_P(DequantRows, MatchQuantDecoders) {
  DLLM_REQUIRE_GPU();
  const auto [type, wtype] = GetParam();
  const int64_t n_in = 512, n_rows = 5;
  std::mt19937 rng(3);
  const std::vector<uint8_t> bytes = test::synthetic_detail::random_tensor(type, n_in * n_rows, 0.05, rng);
  const int64_t row_bytes = static_cast<int64_t>(bytes.size() / n_rows);
  // Device layout: Q6_K blocks padded to 224 bytes (210 bytes of ggml block, then zeros).
  std::vector<uint8_t> dev_bytes = bytes;
  int64_t dev_row_bytes = row_bytes;
  if (type == gguf::GgmlType::Q6_K) {
    const int64_t n_blocks = n_in * n_rows / 256;
    dev_bytes.assign(n_blocks * cuda::kern::kQ6KPaddedBytes, 0);
    for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(&dev_bytes[b * 224], &bytes[b * 210], 210);
    dev_row_bytes = n_in / 256 * 224;
  }
  DeviceArray<uint8_t> w(dev_bytes);
  const std::vector<int32_t> ids = {3, 0, 4, 4};
  DeviceArray<int32_t> ids_dev(ids);
  DeviceArray<float> out32(ids.size() * n_in);
  DeviceArray<uint16_t> out16(ids.size() * n_in);
  cuda::kern::dequant_rows(wtype, w.get(), dev_row_bytes, n_in, ids_dev.get(), 0,
                           static_cast<int64_t>(ids.size()), out32.get(), out16.get(), n_in, nullptr);
  const auto got32 = out32.host();
  const auto got16 = out16.host();
  for (size_t j = 0; j < ids.size(); ++j) {
    std::vector<float> want(n_in);
    quant::dequantize_row(type, bytes.data() + ids[j] * row_bytes, want.data(), n_in);
    for (int64_t e = 0; e < n_in; ++e) {
      ASSERT_EQ(got32[j * n_in + e], want[e]) << "row " << ids[j] << " value " << e;  // exact: same formula
      ASSERT_EQ(got16[j * n_in + e], quant::fp32_to_fp16(want[e])) << "row " << ids[j] << " value " << e;
    }
  }
  // Contiguous rows (row_ids == nullptr), the cuBLAS scratch case.
  DeviceArray<float> out_rows(2 * n_in);
  cuda::kern::dequant_rows(wtype, w.get(), dev_row_bytes, n_in, nullptr, 2, 2, out_rows.get(), nullptr, n_in,
                           nullptr);
  const auto got_rows = out_rows.host();
  std::vector<float> want(n_in);
  quant::dequantize_row(type, bytes.data() + 3 * row_bytes, want.data(), n_in);
  for (int64_t e = 0; e < n_in; ++e) ASSERT_EQ(got_rows[n_in + e], want[e]);
}

INSTANTIATE_TEST_SUITE_P(Types, DequantRows,
                         ::testing::Values(DequantCase{gguf::GgmlType::Q4_K, WType::kQ4_K},
                                           DequantCase{gguf::GgmlType::Q6_K, WType::kQ6_K},
                                           DequantCase{gguf::GgmlType::F16, WType::kF16},
                                           DequantCase{gguf::GgmlType::F32, WType::kF32},
                                           DequantCase{gguf::GgmlType::BF16, WType::kBF16}),
                         [](const auto& info) { return std::string(gguf::type_name(info.param.type)); });

// ---------------------------------------------------------------------------------------------

TEST(RowKernels, AddRmsNormQuantMatchesCpu) {
  DLLM_REQUIRE_GPU();
  // 640 = 2 full Q8_K blocks and a short one of 128; row magnitudes differ 7x.
  for (const int64_t n : {int64_t{512}, int64_t{640}}) {
    const int64_t rows = 6;
    std::vector<float> x = random_floats(rows * n, 1.0f, 11), add = random_floats(rows * n, 0.5f, 12);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) x[r * n + i] *= 1.0f + r;
    const std::vector<float> w = random_floats(n, 1.0f, 13);
    for (const bool f16_q8 : {false, true}) {
      DeviceArray<float> xd(x), ad(add), wd(w);
      DeviceArray<uint16_t> y16(rows * n);
      DeviceArray<int8_t> q(rows * n);
      DeviceArray<float> ds(rows * n / 16);
      cuda::kern::add_rmsnorm_quant(xd.get(), ad.get(), true, wd.get(), 1e-5f, rows, n, nullptr, y16.get(),
                                    f16_q8, q.get(), ds.get(), nullptr);
      std::vector<float> xsum(rows * n), y(rows * n);
      for (int64_t i = 0; i < rows * n; ++i) xsum[i] = x[i] + add[i];
      for (int64_t r = 0; r < rows; ++r) cpu::rmsnorm(&xsum[r * n], w.data(), &y[r * n], n, 1e-5f);
      EXPECT_EQ(xd.host(), xsum) << "the residual add is written back";
      expect_quantized(y, rows, n, q.host(), ds.host(), y16.host(), f16_q8);
    }
  }
}

TEST(RowKernels, RmsNormGatherLeavesXAlone) {
  DLLM_REQUIRE_GPU();
  const int64_t n = 256, tokens = 9;
  const std::vector<float> x = random_floats(tokens * n, 1.0f, 21), add = random_floats(tokens * n, 1.0f, 22);
  const std::vector<float> w = random_floats(n, 1.0f, 23);
  const std::vector<int32_t> rows = {8, 2, 2};  // the LM head rows; a repeat must not add twice
  DeviceArray<float> xd(x), ad(add), wd(w);
  DeviceArray<int32_t> rd(rows);
  DeviceArray<uint16_t> y16(rows.size() * n);
  DeviceArray<int8_t> q(rows.size() * n);
  DeviceArray<float> ds(rows.size() * n / 16);
  cuda::kern::add_rmsnorm_quant(xd.get(), ad.get(), false, wd.get(), 1e-6f, 3, n, rd.get(), y16.get(), false,
                                q.get(), ds.get(), nullptr);
  EXPECT_EQ(xd.host(), x);
  std::vector<float> y(rows.size() * n), xs(n);
  for (size_t j = 0; j < rows.size(); ++j) {
    for (int64_t i = 0; i < n; ++i) xs[i] = x[rows[j] * n + i] + add[rows[j] * n + i];
    cpu::rmsnorm(xs.data(), w.data(), &y[j * n], n, 1e-6f);
  }
  expect_quantized(y, 3, n, q.host(), ds.host(), y16.host(), false);
}

TEST(RowKernels, QuantizeAndSiluMulMatchCpu) {
  DLLM_REQUIRE_GPU();
  const int64_t rows = 5, n = 768;
  const std::vector<float> g = random_floats(rows * n, 2.0f, 31), u = random_floats(rows * n, 1.0f, 32);
  DeviceArray<float> gd(g), ud(u);
  DeviceArray<uint16_t> y16(rows * n);
  DeviceArray<int8_t> q(rows * n);
  DeviceArray<float> ds(rows * n / 16);
  cuda::kern::quantize_rows(gd.get(), rows, n, y16.get(), true, q.get(), ds.get(), nullptr);
  expect_quantized(g, rows, n, q.host(), ds.host(), y16.host(), true);

  cuda::kern::silu_mul_quant(gd.get(), ud.get(), rows, n, y16.get(), false, q.get(), ds.get(), nullptr);
  std::vector<float> y(rows * n);
  cpu::silu_mul(g.data(), u.data(), y.data(), rows * n);
  expect_quantized(y, rows, n, q.host(), ds.host(), y16.host(), false);
}

TEST(RowKernels, BiasRopeMatchesCpuBothModes) {
  DLLM_REQUIRE_GPU();
  const int64_t n_tok = 7, n_head = 4, n_head_kv = 2, hd = 64;
  const int64_t n_q = n_head * hd, n_kv = n_head_kv * hd;
  const model::RopeTable table(hd, n_tok, 1e6);
  std::vector<float> cs, sn;
  for (int64_t t = 0; t < n_tok; ++t) {
    cs.insert(cs.end(), table.cos(t), table.cos(t) + hd / 2);
    sn.insert(sn.end(), table.sin(t), table.sin(t) + hd / 2);
  }
  const auto q0 = random_floats(n_tok * n_q, 1.0f, 41), k0 = random_floats(n_tok * n_kv, 1.0f, 42);
  const auto v0 = random_floats(n_tok * n_kv, 1.0f, 43);
  const auto bq = random_floats(n_q, 0.3f, 44), bk = random_floats(n_kv, 0.3f, 45),
             bv = random_floats(n_kv, 0.3f, 46);
  for (const auto mode : {model::RopeMode::kNorm, model::RopeMode::kNeox}) {
    for (const bool bias : {false, true}) {
      DeviceArray<float> qd(q0), kd(k0), vd(v0), bqd(bq), bkd(bk), bvd(bv), cd(cs), sd(sn);
      cuda::kern::bias_rope(qd.get(), kd.get(), vd.get(), bias ? bqd.get() : nullptr,
                            bias ? bkd.get() : nullptr, bias ? bvd.get() : nullptr, cd.get(), sd.get(), n_tok,
                            n_head, n_head_kv, hd, mode == model::RopeMode::kNeox, nullptr);
      std::vector<float> q = q0, k = k0, v = v0;
      for (int64_t t = 0; t < n_tok; ++t) {
        if (bias) {
          cpu::add_inplace(&q[t * n_q], bq.data(), n_q);
          cpu::add_inplace(&k[t * n_kv], bk.data(), n_kv);
          cpu::add_inplace(&v[t * n_kv], bv.data(), n_kv);
        }
        cpu::rope(&q[t * n_q], n_head, hd, table.cos(t), table.sin(t), mode);
        cpu::rope(&k[t * n_kv], n_head_kv, hd, table.cos(t), table.sin(t), mode);
      }
      const auto gq = qd.host(), gk = kd.host(), gv = vd.host();
      for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(gq[i], q[i], 1e-6f * (1 + std::fabs(q[i]))) << i;
      for (size_t i = 0; i < k.size(); ++i) ASSERT_NEAR(gk[i], k[i], 1e-6f * (1 + std::fabs(k[i]))) << i;
      EXPECT_EQ(gv, v);
    }
  }
}

TEST(RowKernels, AttentionMatchesCpu) {
  DLLM_REQUIRE_GPU();
  for (const int64_t hd : {int64_t{64}, int64_t{128}}) {
    const int64_t n = 37, n_head = 4, n_head_kv = 2;  // GQA: 2 query heads per kv head
    const auto q = random_floats(n * n_head * hd, 1.0f, 51), k = random_floats(n * n_head_kv * hd, 1.0f, 52);
    const auto v = random_floats(n * n_head_kv * hd, 1.0f, 53);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<float> want(n * n_head * hd), scratch(2 * n);
    cpu::attention(q.data(), k.data(), v.data(), n, n_head, n_head_kv, hd, scale, want.data(), scratch.data(),
                   n, 1);
    DeviceArray<float> qd(q), kd(k), vd(v), out(want.size());
    cuda::kern::attention(qd.get(), kd.get(), vd.get(), nullptr, out.get(), n, n_head, n_head_kv, hd, scale,
                          nullptr);
    const auto got = out.host();
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 2e-5f * (1 + std::fabs(want[i]))) << i;
  }
}

TEST(RowKernels, MaskedAttentionMatchesF64) {
  // Every mask rule of forward/mask.h (block-causal where the prompt's last tokens share a block with
  // the first generated ones, causal, causal prompt with a sliding window) against softmax over the
  // masked scores in f64; a row whose range is every key against the unmasked kernel, bit for bit.
  DLLM_REQUIRE_GPU();
  const int64_t n = 45, n_head = 4, n_head_kv = 2, hd = 64;
  const auto q = random_floats(n * n_head * hd, 1.0f, 71), k = random_floats(n * n_head_kv * hd, 1.0f, 72);
  const auto v = random_floats(n * n_head_kv * hd, 1.0f, 73);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  DeviceArray<float> qd(q), kd(k), vd(v), out(n * n_head * hd), full(n * n_head * hd);
  cuda::kern::attention(qd.get(), kd.get(), vd.get(), nullptr, full.get(), n, n_head, n_head_kv, hd, scale,
                        nullptr);
  const auto unmasked = full.host();
  struct Case {
    forward::MaskRule rule;
    int64_t window;
  };
  for (const Case& c : {Case{forward::MaskRule::block_causal(8), 0}, Case{forward::MaskRule::causal(), 0},
                        Case{forward::MaskRule::causal_prompt(13), 5}, Case{forward::MaskRule::full(), 0}}) {
    std::vector<int32_t> ranges(2 * n);
    for (int64_t t = 0; t < n; ++t) {
      const forward::KeyRange r = forward::key_range(c.rule, t, n, c.window);
      ranges[2 * t] = r.begin;
      ranges[2 * t + 1] = r.end;
    }
    DeviceArray<int32_t> rd(ranges);
    cuda::kern::attention(qd.get(), kd.get(), vd.get(), rd.get(), out.get(), n, n_head, n_head_kv, hd, scale,
                          nullptr);
    const auto got = out.host();
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t kvh = h / (n_head / n_head_kv);
      for (int64_t t = 0; t < n; ++t) {
        std::vector<double> s;
        double mx = -INFINITY;
        for (int64_t j = ranges[2 * t]; j < ranges[2 * t + 1]; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += double(q[(t * n_head + h) * hd + d]) * k[(j * n_head_kv + kvh) * hd + d];
          s.push_back(dot * scale);
          mx = std::max(mx, s.back());
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < hd; ++d) {
          double want = 0;
          for (size_t i = 0; i < s.size(); ++i)
            want += s[i] / sum * v[((ranges[2 * t] + i) * n_head_kv + kvh) * hd + d];
          const size_t at = (t * n_head + h) * hd + d;
          ASSERT_NEAR(got[at], want, 2e-5 * (1 + std::fabs(want)))
              << forward::describe(c.rule) << " window " << c.window << " head " << h << " row " << t;
          if (ranges[2 * t] == 0 && ranges[2 * t + 1] == n) {
            ASSERT_EQ(got[at], unmasked[at]);
          }
        }
      }
    }
  }
}

TEST(RowStatsReference, HandWorked) {
  // The test's own reference (gpu_test_util.h) on numbers worked out by hand; runs without a GPU.
  const float l[5] = {1.0f, 3.0f, 3.0f, 0.0f, 5.0f};
  const uint8_t allowed[5] = {1, 1, 1, 1, 0};  // id 4 (the largest) disallowed
  const cuda::RowStats r = test::reference_row_stats(l, 5, allowed);
  const double sum = std::exp(-2.0) + 1 + 1 + std::exp(-3.0);
  EXPECT_EQ(r.token, 1);  // the lower id of the tie
  EXPECT_DOUBLE_EQ(r.prob, 1 / sum);
  EXPECT_DOUBLE_EQ(r.margin, 0.0);
  const double p[4] = {std::exp(-2.0) / sum, 1 / sum, 1 / sum, std::exp(-3.0) / sum};
  double ent = 0;
  for (double x : p) ent += x * std::log(x + 1e-10);
  EXPECT_DOUBLE_EQ(r.neg_entropy, ent);
  const cuda::RowStats all = test::reference_row_stats(l, 5, nullptr);
  EXPECT_EQ(all.token, 4);
  EXPECT_NEAR(all.margin, (1 - std::exp(-2.0)) / (std::exp(-4.0) + 2 * std::exp(-2.0) + std::exp(-5.0) + 1),
              1e-15);
}

TEST(RowKernels, RowStatsMatchDefinition) {
  DLLM_REQUIRE_GPU();
  const int64_t n_vocab = 5003, rows = 4;
  std::vector<float> l = random_floats(rows * n_vocab, 2.0f, 61);
  // Row 1: a tie for the top (the lower id wins, margin 0). Row 2: the top id disallowed.
  l[1 * n_vocab + 10] = 9.0f;
  l[1 * n_vocab + 4000] = 9.0f;
  l[2 * n_vocab + 77] = 12.0f;
  std::vector<uint8_t> allowed(n_vocab, 1);
  allowed[77] = 0;
  allowed[3] = 0;
  DeviceArray<float> ld(l);
  DeviceArray<uint8_t> ad(allowed);
  DeviceArray<cuda::RowStats> out(rows);
  for (const bool mask : {false, true}) {
    cuda::kern::row_stats(ld.get(), rows, n_vocab, n_vocab, mask ? ad.get() : nullptr, out.get(), nullptr);
    const auto got = out.host();
    for (int64_t r = 0; r < rows; ++r) {
      test::expect_row_stats(
          got[r], test::reference_row_stats(&l[r * n_vocab], n_vocab, mask ? allowed.data() : nullptr),
          "row " + std::to_string(r) + (mask ? " masked" : ""));
    }
    EXPECT_EQ(got[1].token, 10);
    EXPECT_EQ(got[1].margin, 0.0);
    if (mask) {
      EXPECT_NE(got[2].token, 77);
    }
  }
}

}  // namespace
}  // namespace dllm
