// The tile GEMM over the AMX instructions: TileHw maps the tile unit of cpu/kernels/tile_unit.h onto
// GCC's AMX intrinsics. The only file compiled with -mamx-tile -mamx-int8 (and the AVX-512 flags, for
// the vector code around the tiles); run only where isa_supported(Isa::kAmx).
#include <immintrin.h>

#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/qgemm_tiles_kernel.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {
namespace {

using tiles::Dp;

// A compiler barrier: GCC's tile intrinsics are asm statements that do not tell the compiler which
// memory they read (ldtilecfg declares 8 of its 64 bytes, tileloadd none), so without it stores to
// the configuration or to the unpacked weights could be moved past the instruction that reads them.
inline void memory_barrier() {
  __asm__ __volatile__("" ::: "memory");
}

// The intrinsics paste the tile number into the instruction text, so each tile is spelled out.
#define DLLM_TILE_CASES(STMT)    \
  if constexpr (T == 0) {        \
    STMT(0);                     \
  } else if constexpr (T == 1) { \
    STMT(1);                     \
  } else if constexpr (T == 2) { \
    STMT(2);                     \
  } else if constexpr (T == 3) { \
    STMT(3);                     \
  } else if constexpr (T == 4) { \
    STMT(4);                     \
  } else if constexpr (T == 5) { \
    STMT(5);                     \
  } else if constexpr (T == 6) { \
    STMT(6);                     \
  } else {                       \
    static_assert(T == 7);       \
    STMT(7);                     \
  }

struct TileHw {
  static void config(const tiles::TileConfig& cfg) {
    memory_barrier();
    _tile_loadconfig(&cfg);
  }
  static void release() { _tile_release(); }
  template <int T>
  static void zero() {
#define DLLM_ZERO(n) _tile_zero(n)
    DLLM_TILE_CASES(DLLM_ZERO)
#undef DLLM_ZERO
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    memory_barrier();
#define DLLM_LOAD(n) _tile_loadd(n, base, stride)
    DLLM_TILE_CASES(DLLM_LOAD)
#undef DLLM_LOAD
  }
  template <int T>
  static void store(void* base, int64_t stride) {
#define DLLM_STORE(n) _tile_stored(n, base, stride)
    DLLM_TILE_CASES(DLLM_STORE)
#undef DLLM_STORE
    memory_barrier();
  }
  // C, A, B as tile_unit.h's register plan names them: (tmm_c(s, p), tmm_a(s), tmm_b(p)).
  template <Dp Op, int C, int A, int B>
  static void dp() {
    static_assert(C == tiles::tmm_c(A - 2, B) && (A == 2 || A == 3) && (B == 0 || B == 1),
                  "TileHw spells out the register plan of tile_unit.h only");
#define DLLM_DP(c, a, b)                \
  if constexpr (Op == Dp::kSS) {        \
    _tile_dpbssd(c, a, b);              \
  } else if constexpr (Op == Dp::kSU) { \
    _tile_dpbsud(c, a, b);              \
  } else if constexpr (Op == Dp::kUS) { \
    _tile_dpbusd(c, a, b);              \
  } else {                              \
    _tile_dpbuud(c, a, b);              \
  }
    if constexpr (C == 4) {
      DLLM_DP(4, 2, 0)
    } else if constexpr (C == 5) {
      DLLM_DP(5, 2, 1)
    } else if constexpr (C == 6) {
      DLLM_DP(6, 3, 0)
    } else {
      DLLM_DP(7, 3, 1)
    }
#undef DLLM_DP
  }
};

#undef DLLM_TILE_CASES

}  // namespace

void gemm_q4_K_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q4KFmt>(a);
}
void gemm_q5_K_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q5KFmt>(a);
}
void gemm_q6_K8_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q6KFmt>(a);
}
void gemm_q8_0_amx(const GemmArgs& a) {
  tiles_kernel::gemm<TileHw, tiles_kernel::Q80Fmt>(a);
}

void tile_dp_amx(tiles::Dp op, int m, int k_bytes, const uint8_t* a, int64_t lda, const uint8_t* b,
                 int32_t* c) {
  tiles_kernel::single_dp<TileHw>(op, m, k_bytes, a, lda, b, c);
}

}  // namespace dllm::cpu::qgemm
