// The tile GEMM over the AMX instructions: TileHw maps the tile unit of cpu/kernels/tile_unit.h onto
// the instructions (inline asm, as GCC's AMX intrinsics spell them). The only file compiled with -mamx-tile
// -mamx-int8 (and the AVX-512 flags, for the vector code around the tiles); run only where
// isa_supported(Isa::kAmx).
#include <immintrin.h>

#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/kernels/qgemm_tiles_kernel.h"
#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::qgemm {
namespace {

using tiles::Dp;

// GCC's tile intrinsics paste the tile number into the instruction text from a macro argument, so
// they take literals only; these asm statements print the template's tile number with %c instead
// (the same instructions). Every statement that reads or writes memory says so ("memory"): the
// intrinsics do not (ldtilecfg declares 8 of its 64 bytes, tileloadd none), which would let the
// compiler move stores to the configuration or to the unpacked weights past the instruction.
struct TileHw {
  static void config(const tiles::TileConfig& cfg) {
    __asm__ __volatile__("ldtilecfg %0" ::"m"(cfg) : "memory");
  }
  static void release() { _tile_release(); }
  template <int T>
  static void zero() {
    __asm__ __volatile__("tilezero %%tmm%c0" ::"i"(T));
  }
  template <int T>
  static void load(const void* base, int64_t stride) {
    __asm__ __volatile__("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "i"(T) : "memory");
  }
  template <int T>
  static void store(void* base, int64_t stride) {
    __asm__ __volatile__("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride), "i"(T) : "memory");
  }
  // tdpb<a><b>d C, A, B in Intel's operand order; AT&T lists the operands reversed.
  template <Dp Op, int C, int A, int B>
  static void dp() {
    static_assert(C != A && C != B && A != B, "tdpb*d needs three different tiles");
    if constexpr (Op == Dp::kSS) {
      __asm__ __volatile__("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
    } else if constexpr (Op == Dp::kSU) {
      __asm__ __volatile__("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
    } else if constexpr (Op == Dp::kUS) {
      __asm__ __volatile__("tdpbusd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
    } else {
      __asm__ __volatile__("tdpbuud %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
    }
  }
};

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
