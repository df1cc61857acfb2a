// dream_passes.h on AVX2 + FMA (compiled with the AVX2 flags; called only where the CPU has them).
// Four f64 lanes; a tail of fewer than 4 goes through the same vector code from a zero-padded copy,
// so every element of a row gets the same arithmetic.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "diffusion/dream_passes.h"
#include "diffusion/exp_reduction.h"

namespace dllm::diffusion {

namespace {

// c[0] + c[1] r + ... + c[13] r^13 by Estrin's scheme: pairs, then r^2, r^4, r^8. The dependency chain
// is 4 multiply-adds deep instead of Horner's 13, so the lanes' latency overlaps (the passes are
// bound by it, not by the FMA units).
inline __m256d poly13(__m256d r, const double* c) {
  const auto k = [](double v) { return _mm256_set1_pd(v); };
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d r4 = _mm256_mul_pd(r2, r2);
  const __m256d r8 = _mm256_mul_pd(r4, r4);
  const __m256d q0 = _mm256_fmadd_pd(k(c[1]), r, k(c[0]));
  const __m256d q1 = _mm256_fmadd_pd(k(c[3]), r, k(c[2]));
  const __m256d q2 = _mm256_fmadd_pd(k(c[5]), r, k(c[4]));
  const __m256d q3 = _mm256_fmadd_pd(k(c[7]), r, k(c[6]));
  const __m256d q4 = _mm256_fmadd_pd(k(c[9]), r, k(c[8]));
  const __m256d q5 = _mm256_fmadd_pd(k(c[11]), r, k(c[10]));
  const __m256d q6 = _mm256_fmadd_pd(k(c[13]), r, k(c[12]));
  const __m256d s0 = _mm256_fmadd_pd(q1, r2, q0);
  const __m256d s1 = _mm256_fmadd_pd(q3, r2, q2);
  const __m256d s2 = _mm256_fmadd_pd(q5, r2, q4);
  const __m256d t0 = _mm256_fmadd_pd(s1, r4, s0);
  const __m256d t1 = _mm256_fmadd_pd(q6, r4, s2);
  return _mm256_fmadd_pd(t1, r8, t0);
}

// exp(x) for x in [-708, 0]: x = k ln2 + r with |r| <= ln2 / 2 (fdlibm's two-part ln 2, one
// rounding each through FMA), e^r by its Taylor series to degree 13 (the next term is below 5e-18
// of the result), 2^k from exponent bits (k >= -1021: a normal number). exp_reduction.h's constants,
// as exp_avx512.h on 8 lanes.
inline __m256d exp_reduced(__m256d x) {
  const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(kLog2e)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Hi), x);
  r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Lo), r);
  const __m256d p = poly13(r, kExpInvFact);
  const __m256i e = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

// exp(x) where x >= -708, 0 elsewhere (below, -inf, NaN); x <= 0.
inline __m256d exp_guarded(__m256d x) {
  const __m256d ok = _mm256_cmp_pd(x, _mm256_set1_pd(-708.0), _CMP_GE_OQ);
  return _mm256_and_pd(exp_reduced(_mm256_and_pd(x, ok)), ok);
}

// log(y) for positive normal y, fdlibm's e_log.c on 4 lanes: y = 2^k (1 + f) with 1 + f in
// [sqrt(2)/2, sqrt(2)), s = f / (2 + f), R(s^2) its degree-14 minimax polynomial (Lg1..Lg7), and
// log y = k ln2_hi - ((f^2/2 - (s (f^2/2 + R) + k ln2_lo)) - f), the arrangement that keeps the
// error below 1 ulp in fdlibm (measured here: dream_passes_test, 4 ulp bound).
inline __m256d log_positive(__m256d y) {
  const __m256i bits = _mm256_castpd_si256(y);
  // The biased exponent as a double: OR it into the mantissa of 2^52 and subtract 2^52 (and the bias).
  const __m256i biased = _mm256_srli_epi64(bits, 52);
  __m256d k =
      _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(biased, _mm256_set1_epi64x(0x4330000000000000LL))),
                    _mm256_set1_pd(4503599627370496.0 + 1023.0));
  __m256d m =
      _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000FFFFFFFFFFFFFLL)),
                                          _mm256_set1_epi64x(0x3FF0000000000000LL)));
  const __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(1.4142135623730951), _CMP_GE_OQ);
  m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
  k = _mm256_add_pd(k, _mm256_and_pd(big, _mm256_set1_pd(1.0)));
  const __m256d f = _mm256_sub_pd(m, _mm256_set1_pd(1.0));  // exact: m in [0.707, 1.415)
  const __m256d s = _mm256_div_pd(f, _mm256_add_pd(_mm256_set1_pd(2.0), f));
  const __m256d z = _mm256_mul_pd(s, s);
  const __m256d w = _mm256_mul_pd(z, z);
  const auto c = [](double v) { return _mm256_set1_pd(v); };
  // fdlibm e_log.c: R = t1 + t2 with t1 = w (Lg2 + w (Lg4 + w Lg6)), t2 = z (Lg1 + w (Lg3 + w (Lg5 + w
  // Lg7))).
  const __m256d t1 = _mm256_mul_pd(
      w, _mm256_fmadd_pd(w, _mm256_fmadd_pd(w, c(1.531383769920937332e-01), c(2.222219843214978396e-01)),
                         c(3.999999999940941908e-01)));
  const __m256d t2 = _mm256_mul_pd(
      z, _mm256_fmadd_pd(
             w,
             _mm256_fmadd_pd(w, _mm256_fmadd_pd(w, c(1.479819860511658591e-01), c(1.818357216161805012e-01)),
                             c(2.857142874366239149e-01)),
             c(6.666666666666735130e-01)));
  const __m256d r = _mm256_add_pd(t1, t2);
  const __m256d hfsq = _mm256_mul_pd(_mm256_mul_pd(c(0.5), f), f);
  const __m256d inner =
      _mm256_fmadd_pd(s, _mm256_add_pd(hfsq, r), _mm256_mul_pd(k, c(1.90821492927058770002e-10)));
  return _mm256_fmsub_pd(k, c(6.93147180369123816490e-01), _mm256_sub_pd(_mm256_sub_pd(hfsq, inner), f));
}

inline double hsum(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// Lanes [i, i + 4) of x, zero-padded past n.
inline __m256d load4(const double* x, size_t i, size_t n) {
  if (i + 4 <= n) return _mm256_loadu_pd(x + i);
  alignas(32) double t[4] = {0.0, 0.0, 0.0, 0.0};
  std::memcpy(t, x + i, (n - i) * sizeof(double));
  return _mm256_load_pd(t);
}

inline void store4(double* y, size_t i, size_t n, __m256d v) {
  if (i + 4 <= n) {
    _mm256_storeu_pd(y + i, v);
    return;
  }
  alignas(32) double t[4];
  _mm256_store_pd(t, v);
  std::memcpy(y + i, t, (n - i) * sizeof(double));
}

double exp_shifted_avx2(const float* logits, const uint8_t* allowed, size_t n, double temperature, double m,
                        double* e, uint16_t* bucket, double* bucket_mass, uint32_t* bucket_count) {
  const __m256d vm = _mm256_set1_pd(m);
  const __m256d vt = _mm256_set1_pd(temperature);
  const bool divide = temperature > 0.0;
  const __m256d per_unit = _mm256_set1_pd(kDreamBucketsPerUnit);
  const __m256d last = _mm256_set1_pd(kDreamBuckets - 1);
  __m256d acc = _mm256_setzero_pd();
  for (size_t i = 0; i < n; i += 4) {
    const size_t k = std::min<size_t>(4, n - i);
    __m128 l4;
    int32_t al32 = 0;
    if (k == 4) {
      l4 = _mm_loadu_ps(logits + i);
      std::memcpy(&al32, allowed + i, 4);
    } else {
      alignas(16) float lf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      std::memcpy(lf, logits + i, k * sizeof(float));
      std::memcpy(&al32, allowed + i, k);  // the bytes past the row stay 0: not allowed
      l4 = _mm_load_ps(lf);
    }
    __m256d v = _mm256_cvtps_pd(l4);
    if (divide) v = _mm256_div_pd(v, vt);  // IEEE division: the portable v exactly
    const __m256i a64 = _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(al32));
    const __m256d ok = _mm256_castsi256_pd(
        _mm256_xor_si256(_mm256_cmpeq_epi64(a64, _mm256_setzero_si256()), _mm256_set1_epi64x(-1)));
    const __m256d ev = _mm256_and_pd(exp_guarded(_mm256_sub_pd(v, vm)), ok);
    acc = _mm256_add_pd(acc, ev);
    store4(e, i, n, ev);
    if (bucket) {
      // min returns its second operand for a NaN first one: NaN lands in the last bucket. Disallowed
      // ids get kNoBucket in the array and add to a sink instead of a bucket (no branch per id).
      const __m256d d = _mm256_min_pd(_mm256_mul_pd(_mm256_sub_pd(vm, v), per_unit), last);
      const __m128i b32 = _mm256_cvttpd_epi32(d);
      const __m128i ok32 = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(al32));
      const __m128i named =
          _mm_blendv_epi8(_mm_set1_epi32(kNoBucket), b32,
                          _mm_xor_si128(_mm_cmpeq_epi32(ok32, _mm_setzero_si128()), _mm_set1_epi32(-1)));
      const __m128i b16 = _mm_packus_epi32(named, named);
      if (k == 4) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(bucket + i), b16);
      } else {
        alignas(16) uint16_t t[8];
        _mm_store_si128(reinterpret_cast<__m128i*>(t), b16);
        std::memcpy(bucket + i, t, k * sizeof(uint16_t));
      }
      alignas(16) int32_t b4[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(b4), named);
      alignas(32) double e4[4];
      _mm256_store_pd(e4, ev);
      double sink_mass = 0.0;
      uint32_t sink_count = 0;
      for (size_t j = 0; j < k; ++j) {
        const bool named_bucket = b4[j] != kNoBucket;
        double* mass = named_bucket ? bucket_mass + b4[j] : &sink_mass;
        *mass += e4[j];
      }
      if (bucket_count) {
        for (size_t j = 0; j < k; ++j) {
          uint32_t* count = b4[j] != kNoBucket ? bucket_count + b4[j] : &sink_count;
          *count += 1;
        }
      }
    }
  }
  return hsum(acc);
}

double keep_through_avx2(double* e, uint16_t* bucket, size_t n, int cut) {
  // bucket > cut (kNoBucket is above every cut) -> e = 0, bucket = kNoBucket; 4 ids at a time.
  const __m256i vcut = _mm256_set1_epi64x(cut);
  const __m256i none = _mm256_set1_epi64x(kNoBucket);
  __m256d acc = _mm256_setzero_pd();
  for (size_t i = 0; i < n; i += 4) {
    const size_t k = std::min<size_t>(4, n - i);
    uint64_t b4 = 0;
    if (k == 4) {
      std::memcpy(&b4, bucket + i, 8);
    } else {
      uint16_t t[4] = {kNoBucket, kNoBucket, kNoBucket, kNoBucket};
      std::memcpy(t, bucket + i, k * sizeof(uint16_t));
      std::memcpy(&b4, t, 8);
    }
    const __m256i b = _mm256_cvtepu16_epi64(_mm_cvtsi64_si128(static_cast<long long>(b4)));
    const __m256i drop = _mm256_cmpgt_epi64(b, vcut);
    const __m256d ev = _mm256_andnot_pd(_mm256_castsi256_pd(drop), load4(e, i, n));
    store4(e, i, n, ev);
    acc = _mm256_add_pd(acc, ev);
    const __m256i nb = _mm256_blendv_epi8(b, none, drop);
    // Back to 4 x u16: the low 16 bits of each 64-bit lane.
    alignas(32) uint64_t w[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(w), nb);
    for (size_t j = 0; j < k; ++j) bucket[i + j] = static_cast<uint16_t>(w[j]);
  }
  return hsum(acc);
}

size_t find_bucket_avx2(const uint16_t* bucket, size_t n, uint16_t b, int32_t* ids) {
  // 16 buckets per compare; a bucket holds a small part of the row, so most blocks have no match.
  const __m256i vb = _mm256_set1_epi16(static_cast<int16_t>(b));
  size_t k = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bucket + i));
    uint32_t bits = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi16(x, vb)));
    while (bits) {  // two mask bits per matching u16
      const int j = __builtin_ctz(bits) / 2;
      ids[k++] = static_cast<int32_t>(i + j);
      bits &= ~(3u << (2 * j));
    }
  }
  for (; i < n; ++i)
    if (bucket[i] == b) ids[k++] = static_cast<int32_t>(i);
  return k;
}

RowEnd finish_avx2(double* e, const uint16_t* bucket, size_t n, int cut, double z, bool entropy, double u) {
  // 16 ids at a time. A block of zeros (disallowed or dropped ids: most of a sharp row) stays as it
  // is and adds nothing. The draw adds each block's sum to the running total and resolves the block
  // that passes u id by id.
  const __m256d inv = _mm256_set1_pd(1.0 / z);
  const __m256d eps = _mm256_set1_pd(1e-10);
  const __m256d zero = _mm256_setzero_pd();
  // Unsigned 16-bit compare as signed after flipping the top bit: kNoBucket (0xFFFF) is above any cut.
  const __m256i flip = _mm256_set1_epi16(static_cast<int16_t>(0x8000));
  const __m256i vcut = _mm256_xor_si256(_mm256_set1_epi16(static_cast<int16_t>(cut)), flip);
  RowEnd end;
  __m256d acc = zero;
  double running = 0.0;
  bool draw = u > 0.0;
  for (size_t i = 0; i < n; i += 16) {
    __m256d v[4];
    __m256d any = zero;
    for (int q = 0; q < 4; ++q) {
      v[q] = i + 4 * q < n ? load4(e, i + 4 * q, n) : zero;
      any = _mm256_or_pd(any, v[q]);
    }
    if (_mm256_testz_si256(_mm256_castpd_si256(any), _mm256_castpd_si256(any))) continue;  // +0 only
    if (bucket) {
      __m256i raw;
      if (i + 16 <= n) {
        raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bucket + i));
      } else {
        alignas(32) uint16_t b16[16];
        for (int j = 0; j < 16; ++j) b16[j] = i + j < n ? bucket[i + j] : kNoBucket;
        raw = _mm256_load_si256(reinterpret_cast<const __m256i*>(b16));
      }
      const __m256i b = _mm256_xor_si256(raw, flip);
      const __m256i drop16 = _mm256_cmpgt_epi16(b, vcut);
      // The four 64-bit lanes through memory: _mm256_extract_epi64 needs a constant lane (clang
      // refuses a loop index even where the loop unrolls).
      alignas(32) int64_t d64[4];
      _mm256_store_si256(reinterpret_cast<__m256i*>(d64), drop16);
      for (int q = 0; q < 4; ++q) {
        const __m128i d4 = _mm_cvtsi64_si128(d64[q]);
        v[q] = _mm256_andnot_pd(_mm256_castsi256_pd(_mm256_cvtepi16_epi64(d4)), v[q]);
      }
    }
    __m256d block = zero;
    for (int q = 0; q < 4 && i + 4 * q < n; ++q) {
      const __m256d p = _mm256_mul_pd(v[q], inv);
      store4(e, i + 4 * q, n, p);
      block = _mm256_add_pd(block, p);
      if (entropy) {
        const __m256d nonzero = _mm256_cmp_pd(p, zero, _CMP_NEQ_UQ);
        acc =
            _mm256_add_pd(acc, _mm256_and_pd(_mm256_mul_pd(p, log_positive(_mm256_add_pd(p, eps))), nonzero));
      }
    }
    if (draw) {
      const double s = hsum(block);
      if (running + s > u) {
        for (size_t j = i; j < std::min(n, i + 16) && end.draw < 0; ++j) {
          running += e[j];
          if (running > u) end.draw = static_cast<int32_t>(j);
        }
        draw = end.draw < 0;  // rounding: the block's ids did not pass u one by one; go on
      } else {
        running += s;
      }
    }
  }
  end.neg_entropy = entropy ? hsum(acc) : 0.0;
  return end;
}

float max_allowed_avx2(const float* logits, const uint8_t* allowed, size_t n) {
  // 8 at a time: disallowed lanes and NaN (the ordered compare fails) keep -inf.
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 m = neg_inf;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t a8 = 0;
    std::memcpy(&a8, allowed + i, 8);
    const __m256i a = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(a8)));
    const __m256 ok = _mm256_castsi256_ps(
        _mm256_xor_si256(_mm256_cmpeq_epi32(a, _mm256_setzero_si256()), _mm256_set1_epi32(-1)));
    const __m256 l = _mm256_loadu_ps(logits + i);
    const __m256 take = _mm256_and_ps(ok, _mm256_cmp_ps(l, m, _CMP_GT_OQ));
    m = _mm256_blendv_ps(m, l, take);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float best = -std::numeric_limits<float>::infinity();
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i)
    if (allowed[i] && logits[i] > best) best = logits[i];
  return best;
}

constexpr DreamPasses kAvx2 = {"avx2",           true,        exp_shifted_avx2, keep_through_avx2,
                               find_bucket_avx2, finish_avx2, max_allowed_avx2};

}  // namespace

const DreamPasses& dream_passes_avx2() {
  return kAvx2;
}

void exp_avx2(const double* x, double* y, size_t n) {
  for (size_t i = 0; i < n; i += 4) store4(y, i, n, exp_guarded(load4(x, i, n)));
}

void log_avx2(const double* x, double* y, size_t n) {
  for (size_t i = 0; i < n; i += 4) {
    // Padding lanes get 1 (log 1 = 0) rather than 0, outside the function's domain.
    alignas(32) double t[4] = {1.0, 1.0, 1.0, 1.0};
    std::memcpy(t, x + i, std::min<size_t>(4, n - i) * sizeof(double));
    store4(y, i, n, log_positive(_mm256_load_pd(t)));
  }
}

}  // namespace dllm::diffusion
