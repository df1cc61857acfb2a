// TileHw: the tile unit of cpu/kernels/tile_unit.h on the AMX instructions (inline asm, as GCC's AMX
// intrinsics spell them), for the tile kernels (qgemm_tiles_amx.cpp, panel_gemm_amx.cpp). Include only
// from files compiled with the AMX flags (*_amx.cpp); run only where the CPU and OS have AMX
// (base/isa.h).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/kernels/tile_unit.h"

namespace dllm::cpu::tiles {

// GCC's tile intrinsics paste the tile number into the instruction text from a macro argument, so
// they take literals only; these asm statements print the template's tile number with %c instead
// (the same instructions). Every statement that reads or writes memory says so ("memory"): the
// intrinsics do not (ldtilecfg declares 8 of its 64 bytes, tileloadd none), which would let the
// compiler move stores to the configuration or to the unpacked weights past the instruction.
struct TileHw {
  static void config(const TileConfig& cfg) { __asm__ __volatile__("ldtilecfg %0" ::"m"(cfg) : "memory"); }
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
  /// tdpbf16ps C, A, B (Intel SDM vol. 2): C[m][n] (f32) += A[m][2k] * B[k][2n] + A[m][2k + 1] *
  /// B[k][2n + 1] over k < A.colsb / 4, A and B holding bf16 pairs; products exact in f32, the sums
  /// rounded to nearest even, bf16 denormal inputs read as 0 and denormal results flushed to 0.
  template <int C, int A, int B>
  static void dp_bf16() {
    static_assert(C != A && C != B && A != B, "tdpbf16ps needs three different tiles");
    __asm__ __volatile__("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
  }
};

}  // namespace dllm::cpu::tiles
