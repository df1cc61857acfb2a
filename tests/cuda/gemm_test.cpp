// The int8 tensor-core GEMM (src/cuda/gemm_int8.cu) against CPU matmuls:
//  - one mma.sync m16n8k32 / m16n8k16 s8 on one warp against an integer matmul (the fragment layouts);
//  - the Q4_K and Q6_K kernels against an f64 matmul of the dequantized weights (quant's decoders)
//    and the dequantized int8 activations the kernel was given: this measures the kernel's own
//    arithmetic, not the quantization error. Weights have independent 6-bit scales and mins (so a
//    misplaced min term shows), row magnitudes that differ 7x (so a scale-index mix-up shows), and
//    shapes that are not tile multiples (200 rows, 45 tokens).
// Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/kernels.h"
#include "gpu_test_util.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace dllm {
namespace {

using cuda::kern::WType;
using test::DeviceArray;

std::vector<int8_t> random_int8(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(dist(rng));
  return v;
}

TEST(MmaFragments, K32MatchesIntegerMatmul) {
  DLLM_REQUIRE_GPU();
  const auto a = random_int8(16 * 32, 1), b = random_int8(8 * 32, 2);
  DeviceArray<int8_t> ad(a), bd(b);
  DeviceArray<int32_t> cd(16 * 8);
  cuda::kern::mma_s8_k32(ad.get(), bd.get(), cd.get(), nullptr);
  const auto c = cd.host();
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int k = 0; k < 32; ++k) s += int32_t(a[i * 32 + k]) * b[j * 32 + k];
      EXPECT_EQ(c[i * 8 + j], s) << "C[" << i << "][" << j << "]";
    }
  }
}

TEST(MmaFragments, K16MatchesIntegerMatmul) {
  DLLM_REQUIRE_GPU();
  const auto a = random_int8(16 * 16, 3), b = random_int8(8 * 16, 4);
  DeviceArray<int8_t> ad(a), bd(b);
  DeviceArray<int32_t> cd(16 * 8);
  cuda::kern::mma_s8_k16(ad.get(), bd.get(), cd.get(), nullptr);
  const auto c = cd.host();
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      int32_t s = 0;
      for (int k = 0; k < 16; ++k) s += int32_t(a[i * 16 + k]) * b[j * 16 + k];
      EXPECT_EQ(c[i * 8 + j], s) << "C[" << i << "][" << j << "]";
    }
  }
}

/// Random Q4_K rows: independent 6-bit scales and mins, d / dmin scaled per row by 1..7.
std::vector<uint8_t> random_q4k(int64_t n_out, int64_t n_in, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> out(n_out * n_in / 256 * sizeof(quant::block_q4_K));
  auto* b = reinterpret_cast<quant::block_q4_K*>(out.data());
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t i = 0; i < n_in / 256; ++i) {
      quant::block_q4_K& blk = b[r * (n_in / 256) + i];
      const float mag = 1.0f + static_cast<float>(r % 7);
      blk.d = quant::fp32_to_fp16(mag * 0.001f * (1 + byte(rng) / 256.0f));
      blk.dmin = quant::fp32_to_fp16(mag * 0.002f * (1 + byte(rng) / 256.0f));
      for (auto& s : blk.scales) s = static_cast<uint8_t>(byte(rng));
      for (auto& q : blk.qs) q = static_cast<uint8_t>(byte(rng));
    }
  }
  return out;
}

/// Random Q6_K rows: random quants and signed scales, d scaled per row by 1..7.
std::vector<uint8_t> random_q6k(int64_t n_out, int64_t n_in, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255), sc(-64, 63);
  std::vector<uint8_t> out(n_out * n_in / 256 * sizeof(quant::block_q6_K));
  auto* b = reinterpret_cast<quant::block_q6_K*>(out.data());
  for (int64_t r = 0; r < n_out; ++r) {
    for (int64_t i = 0; i < n_in / 256; ++i) {
      quant::block_q6_K& blk = b[r * (n_in / 256) + i];
      for (auto& q : blk.ql) q = static_cast<uint8_t>(byte(rng));
      for (auto& q : blk.qh) q = static_cast<uint8_t>(byte(rng));
      for (auto& s : blk.scales) s = static_cast<int8_t>(sc(rng));
      blk.d = quant::fp32_to_fp16((1.0f + static_cast<float>(r % 7)) * 0.0005f);
    }
  }
  return out;
}

struct GemmCase {
  gguf::GgmlType type;
  int64_t n_out, n_in, n_tok;
};

class GemmInt8 : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmInt8, MatchesF64MatmulOfDequantizedOperands) {
  DLLM_REQUIRE_GPU();
  const GemmCase p = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(p.n_out * 31 + p.n_tok));
  const bool q4 = p.type == gguf::GgmlType::Q4_K;
  const std::vector<uint8_t> w = q4 ? random_q4k(p.n_out, p.n_in, rng) : random_q6k(p.n_out, p.n_in, rng);
  const int64_t row_bytes = static_cast<int64_t>(w.size() / p.n_out);
  std::vector<uint8_t> w_dev = w;
  int64_t dev_row_bytes = row_bytes;
  if (!q4) {  // padded device layout
    const int64_t n_blocks = p.n_out * p.n_in / 256;
    w_dev.assign(n_blocks * 224, 0);
    for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(&w_dev[b * 224], &w[b * 210], 210);
    dev_row_bytes = p.n_in / 256 * 224;
  }

  // Activations: quantized on the GPU (tests/cuda/ops_test.cpp checks that kernel), then read back
  // so the reference uses exactly the int8 values and scales the GEMM sees. Rows padded to 32.
  const int64_t rows_pad = (p.n_tok + 31) / 32 * 32;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows_pad * p.n_in, 0.0f);
  for (int64_t i = 0; i < p.n_tok * p.n_in; ++i)
    x[i] = normal(rng) + 0.3f;  // nonzero mean: the min term matters
  DeviceArray<float> xd(x);
  DeviceArray<int8_t> q(rows_pad * p.n_in);
  DeviceArray<float> ds(rows_pad * p.n_in / 16);
  cuda::kern::quantize_rows(xd.get(), p.n_tok, p.n_in, nullptr, false, q.get(), ds.get(), nullptr);
  const auto qh = q.host();
  const auto dsh = ds.host();

  DeviceArray<uint8_t> wd(w_dev);
  const int64_t ldy = p.n_out + 3;  // a row stride wider than n_out
  DeviceArray<float> y(p.n_tok * ldy);
  cuda::kern::gemm_int8(q4 ? WType::kQ4_K : WType::kQ6_K, wd.get(), dev_row_bytes, p.n_out, p.n_in, q.get(),
                        ds.get(), p.n_tok, y.get(), ldy, nullptr);
  const auto got = y.host();

  std::vector<float> wrow(p.n_in);
  std::vector<double> want(p.n_tok * p.n_out);
  for (int64_t o = 0; o < p.n_out; ++o) {
    quant::dequantize_row(p.type, w.data() + o * row_bytes, wrow.data(), p.n_in);
    for (int64_t t = 0; t < p.n_tok; ++t) {
      double s = 0;
      for (int64_t e = 0; e < p.n_in; ++e) {
        const double a = double(qh[t * p.n_in + e]) * dsh[2 * (t * (p.n_in / 32) + e / 32)];
        s += double(wrow[e]) * a;
      }
      want[t * p.n_out + o] = s;
    }
  }
  // Per output row: error relative to the RMS of that row's outputs (f32 accumulation over n_in).
  double worst = 0;
  for (int64_t o = 0; o < p.n_out; ++o) {
    double norm = 0, diff = 0;
    for (int64_t t = 0; t < p.n_tok; ++t) {
      norm += want[t * p.n_out + o] * want[t * p.n_out + o];
      const double d = got[t * ldy + o] - want[t * p.n_out + o];
      diff += d * d;
    }
    worst = std::max(worst, std::sqrt(diff / norm));
  }
  std::printf("[figures] %s %lldx%lld x %lld tokens: worst row rel RMS %.2e\n",
              gguf::type_name(p.type).c_str(), (long long)p.n_out, (long long)p.n_in, (long long)p.n_tok,
              worst);
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmInt8,
                         ::testing::Values(GemmCase{gguf::GgmlType::Q4_K, 200, 512, 45},
                                           GemmCase{gguf::GgmlType::Q4_K, 64, 256, 1},
                                           GemmCase{gguf::GgmlType::Q4_K, 130, 1024, 96},
                                           GemmCase{gguf::GgmlType::Q6_K, 200, 512, 45},
                                           GemmCase{gguf::GgmlType::Q6_K, 77, 768, 33}),
                         [](const auto& info) {
                           return gguf::type_name(info.param.type) + "_" + std::to_string(info.param.n_out) +
                                  "x" + std::to_string(info.param.n_in) + "_t" +
                                  std::to_string(info.param.n_tok);
                         });

}  // namespace
}  // namespace dllm
