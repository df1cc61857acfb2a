// The "tile unit" the AMX GEMM (kernels/qgemm_tiles_kernel.h) is written against: the tile
// configuration in LDTILECFG's memory format, the register plan every tile kernel uses, and TileEmu,
// a scalar emulation of the AMX-TILE / AMX-INT8 instructions with their documented semantics. The
// kernel template is instantiated twice: with TileEmu (kernels/qgemm_tiles_emu.cpp, generic x86-64
// code, so the packing, indexing and arithmetic of the AMX path are tested on any machine) and with
// the intrinsics (TileHw in kernels/qgemm_tiles_amx.cpp, the only file compiled with -mamx-*).
//
// Semantics (Intel SDM vol. 1 ch. 18 "Intel AMX", vol. 2 LDTILECFG, TILELOADD, TILESTORED, TILEZERO,
// TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD, TILERELEASE), palette 1: eight tiles tmm0..tmm7 of at most 16 rows
// x 64 bytes; the configuration gives each tile its rows and bytes per row (colsb).
//   tileloadd  tmm, [base + stride * r]: row r < rows gets colsb bytes from base + r * stride; the
//              rest of the tile (bytes >= colsb, rows >= rows) is zeroed.
//   tilestored [base + stride * r], tmm: row r < rows writes its colsb bytes there.
//   tdpb<a><b>d C, A, B (a, b = s or u: how A's and B's bytes extend): with M = C.rows, N = C.colsb/4,
//              K = A.colsb (bytes), C[m][n] += sum_{k<K/4} sum_{i<4} A[m][4k+i] * B[k][4n+i] in int32,
//              wrapping, no saturation. B is "K/4 rows x N*4 bytes" (the VNNI layout: row k holds 4
//              consecutive K values of each of the N columns). Faults (#UD) unless C, A, B are three
//              different tiles, A.rows == M, B.rows == K/4, B.colsb == C.colsb, and none exceeds 16
//              rows x 64 bytes; the rest of C (rows >= M, bytes >= C.colsb) is zeroed.
//   tilezero   all bytes 0. ldtilecfg zeroes every tile; tilerelease returns to the init state
//              (no configuration: any tile instruction faults until the next ldtilecfg).
// TileEmu checks each of those conditions and aborts with a message where the hardware would fault,
// so a shape or configuration the kernel gets wrong fails the tests here instead of crashing there.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dllm::cpu::tiles {

/// LDTILECFG's 64-byte memory operand, palette 1 (Intel SDM vol. 2, LDTILECFG): byte 0 palette,
/// byte 1 start_row (0: no interrupted instruction to resume), bytes 16..47 colsb (bytes per row) of
/// tiles 0..15, bytes 48..63 rows of tiles 0..15; everything else, and tiles 8..15, must be 0.
/// A tile with rows = colsb = 0 is unconfigured: any instruction on it faults.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  void set(int tile, int n_rows, int n_colsb) {
    rows[tile] = uint8_t(n_rows);
    colsb[tile] = uint16_t(n_colsb);
  }
};
static_assert(sizeof(TileConfig) == 64);

constexpr int kMaxRows = 16;   ///< rows of a tile (palette 1)
constexpr int kMaxColsb = 64;  ///< bytes per tile row (palette 1)

/// The four int8 dot products: A's bytes (s: signed, u: unsigned) times B's.
enum class Dp { kSS, kSU, kUS, kUU };  // tdpbssd, tdpbsud, tdpbusd, tdpbuud

/// The register plan of the tile kernels: B (weight) planes p = 0, 1 in tmm0, tmm1; A (activation)
/// tiles of token tiles s = 0, 1 in tmm2, tmm3; the C of token tile s and plane p in tmm4 + 2 s + p.
constexpr int tmm_b(int p) {
  return p;
}
constexpr int tmm_a(int s) {
  return 2 + s;
}
constexpr int tmm_c(int s, int p) {
  return 4 + 2 * s + p;
}

/// The configuration of the tile kernels' work steps in the register plan above: token tiles s < ns
/// of m[s] rows, whose A rows hold k_bytes activation bytes; B planes p < np of k_bytes / 4 rows; the
/// C tile of each (s, p). B and C are 16 columns of 4 bytes (one 16-row group). Only those tiles are
/// configured, so a stray use faults (TileEmu checks it); ldtilecfg, which also zeroes every tile,
/// runs only when a step's configuration differs from the one loaded last.
template <class U>
class StepConfig {
 public:
  void load(int ns, const int m[2], int np, int k_bytes) {
    TileConfig cfg;
    for (int s = 0; s < ns; ++s) {
      cfg.set(tmm_a(s), m[s], k_bytes);
      for (int p = 0; p < np; ++p) cfg.set(tmm_c(s, p), m[s], kMaxColsb);
    }
    for (int p = 0; p < np; ++p) cfg.set(tmm_b(p), k_bytes / 4, kMaxColsb);
    if (!loaded_ || std::memcmp(&cfg, &current_, sizeof cfg) != 0) {
      U::config(cfg);
      current_ = cfg;
      loaded_ = true;
    }
  }
  /// Ends the call: tilerelease when anything was configured, so a thread carries no tile state.
  void release() {
    if (loaded_) U::release();
    loaded_ = false;
  }

 private:
  TileConfig current_;
  bool loaded_ = false;
};

/// Scalar emulation of the tile instructions, state per thread (as the registers are). Slow; for the
/// tests (make_matrix_amx_emulated) and never chosen by make_matrix.
struct TileEmu {
  struct State {
    bool configured = false;
    TileConfig cfg;
    alignas(64) uint8_t t[8][kMaxRows][kMaxColsb];
  };
  static State& state() {
    static thread_local State s;
    return s;
  }
  [[noreturn]] static void fault(const char* what, int tile) {
    std::fprintf(stderr, "emulated AMX fault (the hardware would raise #UD/#GP): %s (tmm%d)\n", what, tile);
    std::abort();
  }
  // The tile's shape, faulting when there is no configuration or the tile is not configured.
  static void shape(int tile, int* rows, int* colsb) {
    const State& s = state();
    if (!s.configured) fault("tile instruction without a loaded configuration", tile);
    *rows = s.cfg.rows[tile];
    *colsb = s.cfg.colsb[tile];
    if (*rows == 0 || *colsb == 0) fault("tile not configured", tile);
  }

  static void config(const TileConfig& cfg) {
    if (cfg.palette != 1) fault("palette other than 1", -1);
    if (cfg.start_row != 0) fault("start_row != 0", -1);
    for (uint8_t b : cfg.reserved) {
      if (b != 0) fault("reserved configuration byte set", -1);
    }
    for (int i = 0; i < 16; ++i) {
      const bool used = cfg.rows[i] != 0 || cfg.colsb[i] != 0;
      if (i >= 8 && used) fault("palette 1 has 8 tiles", i);
      if (cfg.rows[i] > kMaxRows || cfg.colsb[i] > kMaxColsb) fault("tile larger than 16 x 64 bytes", i);
      if (used && (cfg.rows[i] == 0 || cfg.colsb[i] == 0)) fault("tile with rows or colsb 0 but not both", i);
    }
    State& s = state();
    s.cfg = cfg;
    s.configured = true;
    std::memset(s.t, 0, sizeof s.t);
  }
  static void release() {
    State& s = state();
    s.configured = false;
    s.cfg = TileConfig{};
    std::memset(s.t, 0, sizeof s.t);
  }
  template <int T>
  static void zero() {
    int rows, colsb;
    shape(T, &rows, &colsb);
    std::memset(state().t[T], 0, sizeof state().t[T]);
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    int rows, colsb;
    shape(T, &rows, &colsb);
    uint8_t(&t)[kMaxRows][kMaxColsb] = state().t[T];
    std::memset(t, 0, sizeof t);
    for (int r = 0; r < rows; ++r)
      std::memcpy(t[r], static_cast<const uint8_t*>(base) + r * stride, size_t(colsb));
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    int rows, colsb;
    shape(T, &rows, &colsb);
    const uint8_t(&t)[kMaxRows][kMaxColsb] = state().t[T];
    for (int r = 0; r < rows; ++r) std::memcpy(static_cast<uint8_t*>(base) + r * stride, t[r], size_t(colsb));
  }
  template <Dp Op, int C, int A, int B>
  static void dp() {
    static_assert(C != A && C != B && A != B, "tdpb*d needs three different tiles");
    int c_rows, c_colsb, a_rows, a_colsb, b_rows, b_colsb;
    shape(C, &c_rows, &c_colsb);
    shape(A, &a_rows, &a_colsb);
    shape(B, &b_rows, &b_colsb);
    if (a_rows != c_rows) fault("A.rows != C.rows", A);
    if (a_colsb % 4 != 0 || c_colsb % 4 != 0) fault("colsb not a multiple of 4", C);
    if (b_rows != a_colsb / 4) fault("B.rows != A.colsb / 4", B);
    if (b_colsb != c_colsb) fault("B.colsb != C.colsb", B);
    State& s = state();
    const uint8_t(&a)[kMaxRows][kMaxColsb] = s.t[A];
    const uint8_t(&b)[kMaxRows][kMaxColsb] = s.t[B];
    uint8_t(&c)[kMaxRows][kMaxColsb] = s.t[C];
    constexpr bool kASigned = Op == Dp::kSS || Op == Dp::kSU;
    constexpr bool kBSigned = Op == Dp::kSS || Op == Dp::kUS;
    const int n_cols = c_colsb / 4, k4 = a_colsb / 4;
    for (int m = 0; m < c_rows; ++m) {
      for (int n = 0; n < n_cols; ++n) {
        int32_t acc;
        std::memcpy(&acc, &c[m][4 * n], 4);
        uint32_t sum = uint32_t(acc);  // int32 arithmetic that wraps, as the instruction's
        for (int k = 0; k < k4; ++k) {
          for (int i = 0; i < 4; ++i) {
            const int32_t x = kASigned ? int32_t(int8_t(a[m][4 * k + i])) : int32_t(a[m][4 * k + i]);
            const int32_t y = kBSigned ? int32_t(int8_t(b[k][4 * n + i])) : int32_t(b[k][4 * n + i]);
            sum += uint32_t(x * y);
          }
        }
        acc = int32_t(sum);
        std::memcpy(&c[m][4 * n], &acc, 4);
      }
      std::memset(&c[m][c_colsb], 0, size_t(kMaxColsb - c_colsb));
    }
    for (int m = c_rows; m < kMaxRows; ++m) std::memset(c[m], 0, kMaxColsb);
  }
};

}  // namespace dllm::cpu::tiles
