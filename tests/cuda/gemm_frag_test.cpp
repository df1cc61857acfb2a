// The int8 GEMM's per-lane arithmetic (src/cuda/gemm_frag.h) on the CPU, no GPU needed: all 32
// lanes of one warp decode their Q4_K / Q6_K A fragments and load their B fragments of two token
// tiles (gemm_frag.h's offsets), an mma written here from the PTX manual's fragment tables (independent
// of the kernel) multiplies them, and each lane accumulates its C elements with its row factors and
// activation scales. The 16 x 16 result must match an f64
// matmul of the weights decoded by src/quant (dequantize_row) and the dequantized activations.
// What this cannot check is the hardware's own layout: tests/cuda/gemm_test.cpp does that on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "cuda/gemm_frag.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace dllm {
namespace {

namespace frag = cuda::kern::frag;

int8_t byte_of(uint32_t reg, int i) {
  return static_cast<int8_t>((reg >> (8 * i)) & 0xff);
}

constexpr int kTokens = 16;  // two token tiles of 8 (nt = 0, 1)

struct Activations {
  int64_t n_in = 0;
  std::vector<int8_t> q;  // kTokens x n_in
  std::vector<float> ds;  // kTokens x (n_in / 32) x {d, d * sum}
};

Activations random_activations(int64_t n_in, std::mt19937& rng) {
  Activations a;
  a.n_in = n_in;
  std::uniform_int_distribution<int> qd(-127, 127);
  std::uniform_real_distribution<float> dd(0.001f, 0.02f);
  a.q.resize(kTokens * n_in);
  for (auto& v : a.q) v = static_cast<int8_t>(qd(rng));
  for (int t = 0; t < kTokens; ++t) {
    for (int64_t g = 0; g < n_in / 32; ++g) {
      const float d = dd(rng);
      int sum = 0;
      for (int l = 0; l < 32; ++l) sum += a.q[t * n_in + 32 * g + l];
      a.ds.push_back(d);
      a.ds.push_back(d * static_cast<float>(sum));
    }
  }
  return a;
}

/// C (16 x 8) = A B for one m16n8kK tile, from the lanes' registers, by the PTX fragment tables:
/// A reg r of lane (group, tig) holds row group + 8 (r & 1), k 4 tig + 16 (r >> 1) + byte; B reg r holds
/// column group, k 4 tig + 16 r + byte. Returns each lane's c0..c3 = C[group][2 tig], C[group][2 tig + 1],
/// C[group + 8][2 tig], C[group + 8][2 tig + 1].
template <int kK, int kARegs, int kBRegs>
std::vector<std::array<int, 4>> warp_mma(const std::vector<std::array<uint32_t, kARegs>>& a_regs,
                                         const std::vector<std::array<uint32_t, kBRegs>>& b_regs) {
  int A[16][kK] = {}, B[kK][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, tig = lane % 4;
    for (int r = 0; r < kARegs; ++r) {
      for (int i = 0; i < 4; ++i)
        A[group + 8 * (r & 1)][4 * tig + 16 * (r >> 1) + i] = byte_of(a_regs[lane][r], i);
    }
    for (int r = 0; r < kBRegs; ++r) {
      for (int i = 0; i < 4; ++i) B[4 * tig + 16 * r + i][group] = byte_of(b_regs[lane][r], i);
    }
  }
  int C[16][8] = {};
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      for (int k = 0; k < kK; ++k) C[m][n] += A[m][k] * B[k][n];
  std::vector<std::array<int, 4>> c(32);
  for (int lane = 0; lane < 32; ++lane) {
    const int group = lane / 4, tig = lane % 4;
    c[lane] = {C[group][2 * tig], C[group][2 * tig + 1], C[group + 8][2 * tig], C[group + 8][2 * tig + 1]};
  }
  return c;
}

/// f64 reference: y[r][t] = sum_e W[r][e] * q[t][e] * d[t][e / 32], W decoded by quant.
std::vector<double> reference(gguf::GgmlType type, const std::vector<uint8_t>& w, const Activations& a) {
  const int64_t row_bytes = static_cast<int64_t>(w.size() / 16);
  std::vector<double> y(16 * kTokens);
  std::vector<float> row(a.n_in);
  for (int r = 0; r < 16; ++r) {
    quant::dequantize_row(type, w.data() + r * row_bytes, row.data(), a.n_in);
    for (int t = 0; t < kTokens; ++t) {
      double s = 0;
      for (int64_t e = 0; e < a.n_in; ++e)
        s += double(row[e]) * a.q[t * a.n_in + e] * a.ds[2 * (t * (a.n_in / 32) + e / 32)];
      y[r * kTokens + t] = s;
    }
  }
  return y;
}

/// The lanes' accumulators (token tile nt at acc[nt][lane]) as a 16 x kTokens matrix.
std::vector<double> gather(const std::vector<std::vector<std::array<float, 4>>>& acc) {
  std::vector<double> y(16 * kTokens);
  for (int nt = 0; nt < kTokens / 8; ++nt) {
    for (int lane = 0; lane < 32; ++lane) {
      const int group = lane / 4, tig = lane % 4, t = 8 * nt + 2 * tig;
      y[group * kTokens + t] = acc[nt][lane][0];
      y[group * kTokens + t + 1] = acc[nt][lane][1];
      y[(group + 8) * kTokens + t] = acc[nt][lane][2];
      y[(group + 8) * kTokens + t + 1] = acc[nt][lane][3];
    }
  }
  return y;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want) {
  double norm = 0, diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    norm += want[i] * want[i];
    diff += (got[i] - want[i]) * (got[i] - want[i]);
  }
  EXPECT_LE(std::sqrt(diff / norm), 1e-5) << "relative RMS of the 16 x 16 tile";
}

TEST(GemmFragments, Q4KWarpMatchesDequantizedMatmul) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  const int64_t n_in = 512, nb = n_in / 256;
  std::vector<uint8_t> w(16 * nb * sizeof(quant::block_q4_K));
  auto* blocks = reinterpret_cast<quant::block_q4_K*>(w.data());
  for (int64_t i = 0; i < 16 * nb; ++i) {
    const float mag = 1.0f + static_cast<float>((i / nb) % 7);  // row magnitudes 1..7
    blocks[i].d = quant::fp32_to_fp16(mag * 0.001f * (1 + byte(rng) / 256.0f));
    blocks[i].dmin = quant::fp32_to_fp16(mag * 0.002f * (1 + byte(rng) / 256.0f));
    for (auto& s : blocks[i].scales) s = static_cast<uint8_t>(byte(rng));
    for (auto& q : blocks[i].qs) q = static_cast<uint8_t>(byte(rng));
  }
  const Activations act = random_activations(n_in, rng);
  const int64_t n_groups = n_in / 32;
  std::vector<std::vector<std::array<float, 4>>> acc(kTokens / 8,
                                                     std::vector<std::array<float, 4>>(32, {0, 0, 0, 0}));
  for (int64_t sb = 0; sb < nb; ++sb) {
    for (int j = 0; j < 8; ++j) {
      std::vector<std::array<uint32_t, 4>> regs(32);
      for (int lane = 0; lane < 32; ++lane) {
        const int group = lane / 4, tig = lane % 4;
        uint32_t a[4];
        frag::q4k_a_frag(w.data() + (group * nb + sb) * 144, w.data() + ((group + 8) * nb + sb) * 144, j, tig,
                         a);
        regs[lane] = {a[0], a[1], a[2], a[3]};
      }
      const int64_t g = sb * 8 + j;
      for (int nt = 0; nt < kTokens / 8; ++nt) {
        std::vector<std::array<uint32_t, 2>> bregs(32);
        for (int lane = 0; lane < 32; ++lane) {
          const int8_t* qt = act.q.data() + frag::b_offset_k32(n_in, nt, lane / 4, lane % 4, g);
          bregs[lane] = {frag::ld32(qt), frag::ld32(qt + 16)};
        }
        const auto c = warp_mma<32, 4, 2>(regs, bregs);
        for (int lane = 0; lane < 32; ++lane) {
          const int group = lane / 4, tig = lane % 4;
          float fa, fb, ma, mb;
          frag::q4k_factors(w.data() + (group * nb + sb) * 144, j, fa, ma);
          frag::q4k_factors(w.data() + ((group + 8) * nb + sb) * 144, j, fb, mb);
          const int ci[4] = {c[lane][0], c[lane][1], c[lane][2], c[lane][3]};
          float a4[4] = {acc[nt][lane][0], acc[nt][lane][1], acc[nt][lane][2], acc[nt][lane][3]};
          const float* ds0 = &act.ds[frag::ds_index(n_groups, nt, tig, g)];
          frag::accumulate(a4, ci, fa, fb, ma, mb, ds0, ds0 + 2 * n_groups);
          acc[nt][lane] = {a4[0], a4[1], a4[2], a4[3]};
        }
      }
    }
  }
  expect_close(gather(acc), reference(gguf::GgmlType::Q4_K, w, act));
}

TEST(GemmFragments, Q6KWarpMatchesDequantizedMatmul) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<int> byte(0, 255), sc(-64, 63);
  const int64_t n_in = 768, nb = n_in / 256;
  std::vector<uint8_t> w(16 * nb * sizeof(quant::block_q6_K));
  auto* blocks = reinterpret_cast<quant::block_q6_K*>(w.data());
  for (int64_t i = 0; i < 16 * nb; ++i) {
    for (auto& q : blocks[i].ql) q = static_cast<uint8_t>(byte(rng));
    for (auto& q : blocks[i].qh) q = static_cast<uint8_t>(byte(rng));
    for (auto& s : blocks[i].scales) s = static_cast<int8_t>(sc(rng));
    blocks[i].d = quant::fp32_to_fp16((1.0f + static_cast<float>((i / nb) % 7)) * 0.0005f);
  }
  // The device layout: each 210-byte block padded to 224.
  std::vector<uint8_t> padded(16 * nb * frag::kQ6KPaddedBytes, 0);
  for (int64_t i = 0; i < 16 * nb; ++i) std::memcpy(&padded[i * 224], &w[i * 210], 210);
  const Activations act = random_activations(n_in, rng);
  const int64_t n_groups = n_in / 32;
  std::vector<std::vector<std::array<float, 4>>> acc(kTokens / 8,
                                                     std::vector<std::array<float, 4>>(32, {0, 0, 0, 0}));
  for (int64_t sb = 0; sb < nb; ++sb) {
    for (int j = 0; j < 16; ++j) {
      std::vector<std::array<uint32_t, 2>> regs(32);
      for (int lane = 0; lane < 32; ++lane) {
        const int group = lane / 4, tig = lane % 4;
        uint32_t a[2];
        frag::q6k_a_frag(&padded[(group * nb + sb) * 224], &padded[((group + 8) * nb + sb) * 224], j, tig, a);
        regs[lane] = {a[0], a[1]};
      }
      const int64_t g = sb * 8 + j / 2;
      for (int nt = 0; nt < kTokens / 8; ++nt) {
        std::vector<std::array<uint32_t, 1>> bregs(32);
        for (int lane = 0; lane < 32; ++lane)
          bregs[lane] = {frag::ld32(act.q.data() + frag::b_offset_k16(n_in, nt, lane / 4, lane % 4, sb, j))};
        const auto c = warp_mma<16, 2, 1>(regs, bregs);
        for (int lane = 0; lane < 32; ++lane) {
          const int group = lane / 4, tig = lane % 4;
          const float fa = frag::q6k_factor(&padded[(group * nb + sb) * 224], j);
          const float fb = frag::q6k_factor(&padded[((group + 8) * nb + sb) * 224], j);
          const int ci[4] = {c[lane][0], c[lane][1], c[lane][2], c[lane][3]};
          float a4[4] = {acc[nt][lane][0], acc[nt][lane][1], acc[nt][lane][2], acc[nt][lane][3]};
          const float* ds0 = &act.ds[frag::ds_index(n_groups, nt, tig, g)];
          frag::accumulate(a4, ci, fa, fb, 0.0f, 0.0f, ds0, ds0 + 2 * n_groups);
          acc[nt][lane] = {a4[0], a4[1], a4[2], a4[3]};
        }
      }
    }
  }
  expect_close(gather(acc), reference(gguf::GgmlType::Q6_K, w, act));
}

TEST(GemmFragments, HalfDecoderMatchesQuant) {
  // frag::ld_f16 (the host side of the kernel's f16 loads) against quant::fp16_to_fp32, every value.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint8_t bytes[2] = {static_cast<uint8_t>(h & 0xff), static_cast<uint8_t>(h >> 8)};
    const float want = quant::fp16_to_fp32(static_cast<uint16_t>(h));
    const float got = frag::ld_f16(bytes);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(got, want) << "half 0x" << std::hex << h;
    }
  }
}

}  // namespace
}  // namespace dllm
