// The two integer dot products of the 256-bit GEMM kernels (cpu/kernels/qgemm_ymm.h,
// cpu/kernels/qgemm_bytes_ymm.h), one struct per instantiation, so that one template body serves
// every ymm path and the VNNI form of it can run where the CPU has no VNNI:
//   YmmAvx2      AVX2. kVnni = false: the kernels take their vpmaddubsw route and call only s16.
//   YmmVnniEmu   the VNNI route with vpdpbusd / vpdpwssd replaced by exact AVX2 sequences. Tests
//                only (make_matrix_vnni_emulated): the AVX-VNNI kernels' +128 bias, correction
//                terms and layout reading run on a CPU with AVX2 only.
//   YmmVnniVex   AVX-VNNI, VEX-encoded vpdpbusd / vpdpwssd; defined only under -mavxvnni.
//   YmmVnniEvex  AVX-512 VNNI + VL, EVEX-encoded on ymm; defined only under -mavx512vnni -mavx512vl.
// Semantics (Intel SDM vol. 2, VPDPBUSD / VPDPWSSD): per int32 lane i,
//   u8s8(acc, u, s) = acc + sum_{k<4} u8(u[4i+k]) * s8(s[4i+k])
//   s16(acc, a, b)  = acc + s16(a[2i]) * s16(b[2i]) + s16(a[2i+1]) * s16(b[2i+1])
// with no saturation (the sums wrap modulo 2^32, which the kernels' bounds never reach).
// Included only by files compiled with their ISA's flags; everything is in an anonymous namespace
// so instantiations compiled with different flags never meet at link time.
#pragma once

#include <immintrin.h>

namespace dllm::cpu::qgemm {
namespace {

struct YmmAvx2 {
  static constexpr bool kVnni = false;
  static __m256i s16(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
};

struct YmmVnniEmu {
  static constexpr bool kVnni = true;
  // Even and odd bytes widened to int16 (zero-extended u, sign-extended s): each vpmaddwd then adds
  // two exact products (|u s| <= 255 * 128) into an exact int32, and the two halves give the four.
  static __m256i u8s8(__m256i acc, __m256i u, __m256i s) {
    const __m256i u_even = _mm256_and_si256(u, _mm256_set1_epi16(0x00FF));
    const __m256i u_odd = _mm256_srli_epi16(u, 8);
    const __m256i s_even = _mm256_srai_epi16(_mm256_slli_epi16(s, 8), 8);
    const __m256i s_odd = _mm256_srai_epi16(s, 8);
    return _mm256_add_epi32(
        acc, _mm256_add_epi32(_mm256_madd_epi16(u_even, s_even), _mm256_madd_epi16(u_odd, s_odd)));
  }
  // vpmaddwd wraps only for (-32768)^2 + (-32768)^2 = 2^31, exactly where vpdpwssd's sum wraps too.
  static __m256i s16(__m256i acc, __m256i a, __m256i b) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
  }
};

#if defined(__AVXVNNI__)
struct YmmVnniVex {
  static constexpr bool kVnni = true;
  static __m256i u8s8(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
  static __m256i s16(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
};
#endif

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
struct YmmVnniEvex {
  static constexpr bool kVnni = true;
  static __m256i u8s8(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }
  static __m256i s16(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_epi32(acc, a, b); }
};
#endif

}  // namespace
}  // namespace dllm::cpu::qgemm
