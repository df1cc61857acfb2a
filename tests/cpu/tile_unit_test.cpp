// The tile unit of the AMX GEMM (src/cpu/kernels/tile_unit.h): TileEmu, the scalar emulation the
// tests of the tile kernels run on, against an ordinary matrix product written here from the
// instruction's definition (Intel SDM vol. 2, TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD: the B operand holds
// 4 consecutive K values of each column per row, "VNNI" layout), and, on a CPU with AMX, the
// hardware against the same product. Also: the emulation refuses what the hardware faults on.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "base/isa.h"
#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu {
namespace {

using tiles::Dp;

struct Case {
  int m, k;                // A rows, K (bytes per A row)
  std::vector<uint8_t> a;  // m x k, row stride lda
  int64_t lda;
  std::vector<uint8_t> w;  // k x 16, W[kk][n]: the weights as a plain matrix
  std::vector<uint8_t> b;  // W packed: b[(kk / 4) * 64 + 4 n + kk % 4] = W[kk][n]
};

Case random_case(int m, int k, int64_t lda, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c{m,
         k,
         std::vector<uint8_t>(size_t(m * lda)),
         lda,
         std::vector<uint8_t>(size_t(k * 16)),
         std::vector<uint8_t>(size_t(k / 4 * 64))};
  for (uint8_t& v : c.a) v = uint8_t(rng());
  for (uint8_t& v : c.w) v = uint8_t(rng());
  for (int kk = 0; kk < k; ++kk) {
    for (int n = 0; n < 16; ++n) c.b[size_t((kk / 4) * 64 + 4 * n + kk % 4)] = c.w[size_t(kk * 16 + n)];
  }
  return c;
}

// C = A W over the integers, each byte read as signed or unsigned per `op`.
std::vector<int64_t> product(const Case& c, Dp op) {
  const bool a_signed = op == Dp::kSS || op == Dp::kSU, b_signed = op == Dp::kSS || op == Dp::kUS;
  std::vector<int64_t> out(size_t(c.m * 16));
  for (int i = 0; i < c.m; ++i) {
    for (int n = 0; n < 16; ++n) {
      int64_t s = 0;
      for (int kk = 0; kk < c.k; ++kk) {
        const uint8_t x = c.a[size_t(i * c.lda + kk)], y = c.w[size_t(kk * 16 + n)];
        s += int64_t(a_signed ? int8_t(x) : x) * int64_t(b_signed ? int8_t(y) : y);
      }
      out[size_t(i * 16 + n)] = s;
    }
  }
  return out;
}

using DpFn = void (*)(Dp, int, int, const uint8_t*, int64_t, const uint8_t*, int32_t*);

void check_unit(DpFn dp) {
  for (Dp op : {Dp::kSS, Dp::kSU, Dp::kUS, Dp::kUU}) {
    for (auto [m, k, lda] : {std::tuple{16, 64, 64}, {16, 32, 292}, {13, 16, 292}, {1, 4, 8}, {7, 32, 34}}) {
      SCOPED_TRACE("op " + std::to_string(int(op)) + ", m " + std::to_string(m) + ", k " + std::to_string(k));
      const Case c = random_case(m, k, lda, uint64_t(m * 100 + k + int(op)));
      std::vector<int32_t> got(size_t(m * 16), 12345);
      dp(op, m, k, c.a.data(), c.lda, c.b.data(), got.data());
      const std::vector<int64_t> want = product(c, op);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(int64_t(got[i]), want[i]) << "element " << i;
    }
  }
}

TEST(TileUnit, EmulationIsTheMatrixProduct) {
  check_unit(qgemm::tile_dp_emu);
}

TEST(TileUnit, HardwareIsTheMatrixProduct) {
  if (!isa_supported(Isa::kAmx)) GTEST_SKIP() << "no AMX here (" << describe_isa(best_isa()) << ")";
  check_unit(qgemm::tile_dp_amx);
}

// A load reads rows `stride` bytes apart and fills only its configured rows x colsb, zeroing the
// rest of the tile; a store writes only those bytes.
TEST(TileUnit, EmulatedLoadAndStoreTouchOnlyTheConfiguredBytes) {
  using tiles::TileEmu;
  tiles::TileConfig cfg;
  cfg.set(0, 3, 8);
  TileEmu::config(cfg);
  std::vector<uint8_t> src(80 * 16), dst(64 * 16, 0x11);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 7 + 1);
  TileEmu::load<0>(src.data(), 80);
  TileEmu::store<0>(dst.data(), 64);
  for (int r = 0; r < 16; ++r) {
    for (int b = 0; b < 64; ++b) {
      EXPECT_EQ(dst[size_t(r * 64 + b)], (r < 3 && b < 8) ? src[size_t(r * 80 + b)] : 0x11) << r << " " << b;
    }
  }
  TileEmu::release();
}

// Where the hardware faults (#UD), the emulation aborts with a message: a product whose shapes do not
// fit, and any tile instruction without a configuration.
// B has 4 rows where A's 32 bytes need K / 4 = 8.
void product_with_mismatched_b() {
  tiles::TileConfig cfg;
  cfg.set(2, 16, 32);
  cfg.set(0, 4, 64);
  cfg.set(4, 16, 64);
  tiles::TileEmu::config(cfg);
  tiles::TileEmu::dp<Dp::kSU, 4, 2, 0>();
}

TEST(TileUnitDeathTest, EmulationRefusesWhatTheHardwareFaultsOn) {
  EXPECT_DEATH(product_with_mismatched_b(), "B.rows != A.colsb / 4");
  EXPECT_DEATH(tiles::TileEmu::zero<1>(), "without a loaded configuration");
}

}  // namespace
}  // namespace dllm::cpu
