// The SIMD row kernels of cpu/kernels/row_kernels.h written once over a vector type V, instantiated by
// row_kernels_avx2.cpp (V = 8 f32 lanes, ymm) and row_kernels_avx512.cpp (16 lanes, zmm), each
// compiled with its ISA's flags. Included ONLY by those files; everything is in an anonymous
// namespace so the two instantiations never meet at link time.
//
// V provides: F (the vector), W (lanes), zero, set1, load/store (unaligned), add, sub, mul, div, fmadd
// (a * b + c, one rounding), max, min, abs, hmax (largest lane), round_even (to nearest, ties to even),
// exp2n (p * 2^n for integral n in [-126, 127]), keep_ge (lanes of r where x >= lim, else 0),
// eq_mask (bit i set where a[i] == b[i]), quant16 (16 values times iscale, rounded, clamped to 127,
// stored as int8, their sum returned), and DAcc / dzero / dadd / dsq / dsum (a sum of f32 lanes, or
// of their squares, in double).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/row_kernels.h"
#include "cpu/ops.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace dllm::cpu::simd {
namespace {

/// e^x per lane: x = n ln2 + r with n = round(x / ln2), |r| <= ln2 / 2, e^r by its Taylor series to
/// r^7 (truncation < 2^-27 relative), times 2^n. ln2 is split in two (Cody-Waite) so n ln2 is exact
/// enough. Inputs above 88 are clamped to 88 (e^88 = 1.65e38, still finite: silu's exp(-g) for
/// g < -88 then gives silu = -0 direction, as the exact value does); inputs below ln(FLT_MIN) give 0
/// (softmax's padded lanes are -inf).
template <class V>
inline typename V::F vexp(typename V::F x) {
  using F = typename V::F;
  constexpr float kHi = 88.0f, kLo = -87.3365478515625f;
  const F xc = V::min(V::max(x, V::set1(kLo)), V::set1(kHi));
  const F n = V::round_even(V::mul(xc, V::set1(1.44269504088896341f)));
  F r = V::fmadd(n, V::set1(-0.693145751953125f), xc);  // ln2 high part: 16 significant bits
  r = V::fmadd(n, V::set1(-1.428606765330187e-06f), r);
  F p = V::set1(1.0f / 5040.0f);
  p = V::fmadd(p, r, V::set1(1.0f / 720.0f));
  p = V::fmadd(p, r, V::set1(1.0f / 120.0f));
  p = V::fmadd(p, r, V::set1(1.0f / 24.0f));
  p = V::fmadd(p, r, V::set1(1.0f / 6.0f));
  p = V::fmadd(p, r, V::set1(0.5f));
  p = V::fmadd(p, r, V::set1(1.0f));
  p = V::fmadd(p, r, V::set1(1.0f));
  return V::keep_ge(V::exp2n(p, n), x, kLo);
}

// ---------------------------------------------------------------------------------------------------
// Q8_K quantization, bit-identical to quant::quantize_row_q8_K: the same amax, the same signed max
// (the first value of largest magnitude), the same iscale, one f32 multiply and a round to nearest
// even per value, the same clamp and d.

template <class V>
void quantize_q8_K(const float* x, quant::block_q8_K* y, int64_t n) {
  using F = typename V::F;
  const int64_t nb = n / quant::kQK_K;
  for (int64_t i = 0; i < nb; ++i, x += quant::kQK_K) {
    F am = V::zero();
    for (int j = 0; j < quant::kQK_K; j += V::W) am = V::max(V::abs(V::load(x + j)), am);
    const float amax = V::hmax(am);
    if (!(amax > 0.0f)) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof(y[i].qs));
      std::memset(y[i].bsums, 0, sizeof(y[i].bsums));
      continue;
    }
    int first = 0;
    const F amv = V::set1(amax);
    for (int j = 0; j < quant::kQK_K; j += V::W) {
      const unsigned m = V::eq_mask(V::abs(V::load(x + j)), amv);
      if (m != 0) {
        first = j + __builtin_ctz(m);
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const F is = V::set1(iscale);
    for (int g = 0; g < quant::kQK_K / 16; ++g) y[i].bsums[g] = V::quant16(x + 16 * g, is, y[i].qs + 16 * g);
    y[i].d = 1.0f / iscale;
  }
}

// ---------------------------------------------------------------------------------------------------
// RMSNorm: the sum of squares in double (as cpu/ops.h), then y = (x * scale) * w as there.

template <class V>
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  typename V::DAcc acc = V::dzero();
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::dsq(acc, V::load(x + i));
  double sum = V::dsum(acc);
  for (int64_t k = i; k < n; ++k) sum += static_cast<double>(x[k]) * x[k];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  const typename V::F sv = V::set1(scale);
  for (i = 0; i + V::W <= n; i += V::W) V::store(y + i, V::mul(V::mul(V::load(x + i), sv), V::load(w + i)));
  for (; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

// ---------------------------------------------------------------------------------------------------
// SiLU(gate) * up.

template <class V>
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  using F = typename V::F;
  const F one = V::set1(1.0f);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    const F g = V::load(gate + i);
    const F e = vexp<V>(V::sub(V::zero(), g));
    V::store(out + i, V::mul(V::div(g, V::add(one, e)), V::load(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

// ---------------------------------------------------------------------------------------------------
// GELU(gate) * up with cpu/ops.h gelu_f16: the table entry of gate's binary16 bits (F16C rounds ties to
// even, as quant::fp32_to_fp16), 0 at or below -10 and gate itself from 10 up (NaN included, as the
// scalar path's table gives NaN for it too).

template <class V>
void gelu_mul(const float* gate, const float* up, float* out, int64_t n) {
  using F = typename V::F;
  const float* table = gelu_f16_table();
  const float above = std::nextafter(-10.0f, 0.0f);  // the smallest float > -10
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    const F g = V::load(gate + i);
    const F r = V::select_lt(g, 10.0f, V::keep_ge(V::f16_lookup(g, table), g, above), g);
    V::store(out + i, V::mul(r, V::load(up + i)));
  }
  for (; i < n; ++i) out[i] = gelu_f16(gate[i]) * up[i];
}

// ---------------------------------------------------------------------------------------------------
// A vocabulary row's softmax, rounded to f16 (cpu/ops.h softmax_f16): the maximum, e = exp(x s - m)
// kept in y with its sum in double, then y * (1 / sum) rounded to binary16.

template <class V>
void softmax_f16(const float* x, float scale, float* y, int64_t n) {
  using F = typename V::F;
  const F s = V::set1(scale);
  F mv = V::set1(-INFINITY);
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) mv = V::max(mv, V::mul(V::load(x + i), s));
  float m = V::hmax(mv);
  for (int64_t j = i; j < n; ++j) m = std::max(m, x[j] * scale);
  const F mb = V::set1(m);
  typename V::DAcc acc = V::dzero();
  for (i = 0; i + V::W <= n; i += V::W) {
    const F e = vexp<V>(V::sub(V::mul(V::load(x + i), s), mb));
    V::store(y + i, e);
    V::dadd(acc, e);
  }
  double sum = V::dsum(acc);
  for (int64_t j = i; j < n; ++j) sum += y[j] = std::exp(x[j] * scale - m);
  const auto inv = static_cast<float>(1.0 / sum);
  const F iv = V::set1(inv);
  for (i = 0; i + V::W <= n; i += V::W) V::store(y + i, V::round_f16(V::mul(V::load(y + i), iv)));
  for (; i < n; ++i) y[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(y[i] * inv));
}

// ---------------------------------------------------------------------------------------------------
// The final logit softcap, x = tanh(x / cap) * cap. tanh(|y|): for |y| < 0.5 the Taylor series to
// y^19 (the next term is below 2^-30 of y there); above, 1 - 2 / (e^2|y| + 1) (the subtraction loses
// at most a bit: 2 / (e^2|y| + 1) < 0.54; e^2|y| saturates at e^88, where tanh is 1); then y's sign
// (so -0 stays -0) and NaN kept.

template <class V>
void softcap(float* x, int64_t n, float cap) {
  using F = typename V::F;
  const float inv = 1.0f / cap;
  static constexpr float kC[] = {-443861162.0f / 1856156927625.0f,
                                 6404582.0f / 10854718875.0f,
                                 -929569.0f / 638512875.0f,
                                 21844.0f / 6081075.0f,
                                 -1382.0f / 155925.0f,
                                 62.0f / 2835.0f,
                                 -17.0f / 315.0f,
                                 2.0f / 15.0f,
                                 -1.0f / 3.0f};
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) {
    const F y = V::mul(V::load(x + i), V::set1(inv));
    const F a = V::abs(y);
    const F as = V::min(a, V::set1(0.5f));
    const F a2 = V::mul(as, as);
    F q = V::set1(kC[0]);
    for (size_t k = 1; k < std::size(kC); ++k) q = V::fmadd(q, a2, V::set1(kC[k]));
    const F small = V::fmadd(V::mul(as, a2), q, as);
    const F e = vexp<V>(V::add(a, a));
    const F big = V::sub(V::set1(1.0f), V::div(V::set1(2.0f), V::add(e, V::set1(1.0f))));
    const F t = V::keep_nan(V::copysign(V::select_lt(a, 0.5f, small, big), y), y);
    V::store(x + i, V::mul(t, V::set1(cap)));
  }
  for (; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

// ---------------------------------------------------------------------------------------------------
// Q6_K rows decoded, bit-identical to quant::dequantize_row_q6_K: the same signed 6-bit values
// (unpacked 16 at a time with SSE byte logic) and one f32 multiply of each by d * scales[j] (exact).

template <class V>
void dequantize_q6_K(const quant::block_q6_K* x, float* y, int64_t n) {
  const __m128i m4 = _mm_set1_epi8(0x0F), m30 = _mm_set1_epi8(0x30), k32 = _mm_set1_epi8(32);
  alignas(16) int8_t q[quant::kQK_K];
  const auto ld = [](const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  const auto st = [&](int8_t* p, __m128i v) {
    _mm_store_si128(reinterpret_cast<__m128i*>(p), _mm_sub_epi8(v, k32));
  };
  for (int64_t i = 0; i < n / quant::kQK_K; ++i, y += quant::kQK_K) {
    const quant::block_q6_K& b = x[i];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8_t* qh = b.qh + 32 * h;
      int8_t* out = q + 128 * h;
      for (int l = 0; l < 32; l += 16) {  // value 32g + l takes bits 2g..2g+1 of qh[l] as its bits 4-5
        const __m128i lo = ld(ql + l), hi = ld(ql + 32 + l), hb = ld(qh + l);
        st(out + l, _mm_or_si128(_mm_and_si128(lo, m4), _mm_and_si128(_mm_slli_epi16(hb, 4), m30)));
        st(out + l + 32, _mm_or_si128(_mm_and_si128(hi, m4), _mm_and_si128(_mm_slli_epi16(hb, 2), m30)));
        st(out + l + 64, _mm_or_si128(_mm_and_si128(_mm_srli_epi16(lo, 4), m4), _mm_and_si128(hb, m30)));
        st(out + l + 96,
           _mm_or_si128(_mm_and_si128(_mm_srli_epi16(hi, 4), m4), _mm_and_si128(_mm_srli_epi16(hb, 2), m30)));
      }
    }
    const float d = quant::fp16_to_fp32(b.d);
    for (int j = 0; j < quant::kQK_K / 16; ++j) {
      const typename V::F dj = V::set1(d * static_cast<float>(b.scales[j]));
      for (int c = 0; c < 16; c += V::W) V::store(y + 16 * j + c, V::mul(dj, V::from_i8(q + 16 * j + c)));
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Attention of one head. K is transposed once per call into the scratch (head_dim rows of padded
// keys, zeros past n_kv), so a score tile is QT queries x C vectors of keys, one broadcast of a query
// value and one load of K per head dimension feeding QT x C FMAs. The weighted sum of V is QT queries
// x C vectors of head dimensions, one broadcast of a probability per query and one load of V per key.
// Every output element is a chain of FMAs in a fixed order (over d for a score, over keys for an
// output), whatever the tile it falls in.

template <class V, int QT, int C>
inline void score_tile(const float* const* qr, const float* kt, int64_t nkp, int64_t hd, float scale,
                       float* sc) {
  using F = typename V::F;
  F acc[QT][C];
  for (int i = 0; i < QT; ++i) {
    for (int c = 0; c < C; ++c) acc[i][c] = V::zero();
  }
  for (int64_t d = 0; d < hd; ++d) {
    F kv[C];
    for (int c = 0; c < C; ++c) kv[c] = V::load(kt + d * nkp + c * V::W);
    for (int i = 0; i < QT; ++i) {
      const F qb = V::set1(qr[i][d]);
      for (int c = 0; c < C; ++c) acc[i][c] = V::fmadd(qb, kv[c], acc[i][c]);
    }
  }
  const F s = V::set1(scale);
  for (int i = 0; i < QT; ++i) {
    for (int c = 0; c < C; ++c) V::store(sc + i * nkp + c * V::W, V::mul(acc[i][c], s));
  }
}

template <class V, int QT, int C>
inline void pv_tile(const float* p, int64_t nkp, const float* v, int64_t kv_stride, int64_t nk,
                    float* const* out) {
  using F = typename V::F;
  F acc[QT][C];
  for (int i = 0; i < QT; ++i) {
    for (int c = 0; c < C; ++c) acc[i][c] = V::zero();
  }
  for (int64_t j = 0; j < nk; ++j) {
    F vv[C];
    for (int c = 0; c < C; ++c) vv[c] = V::load(v + j * kv_stride + c * V::W);
    for (int i = 0; i < QT; ++i) {
      const F pb = V::set1(p[i * nkp + j]);
      for (int c = 0; c < C; ++c) acc[i][c] = V::fmadd(pb, vv[c], acc[i][c]);
    }
  }
  for (int i = 0; i < QT; ++i) {
    for (int c = 0; c < C; ++c) V::store(out[i] + c * V::W, acc[i][c]);
  }
}

/// Softmax of one score row in place: s[j] = e^(s[j] - max) / sum, the sum in double; lanes
/// [nk, nkp) must hold -inf and come out 0.
template <class V>
inline void softmax_row(float* s, int64_t nkp) {
  using F = typename V::F;
  F mx = V::load(s);
  for (int64_t j = V::W; j < nkp; j += V::W) mx = V::max(V::load(s + j), mx);
  const F m = V::set1(V::hmax(mx));
  typename V::DAcc sum = V::dzero();
  for (int64_t j = 0; j < nkp; j += V::W) {
    const F e = vexp<V>(V::sub(V::load(s + j), m));
    V::store(s + j, e);
    V::dadd(sum, e);
  }
  const F inv = V::set1(static_cast<float>(1.0 / V::dsum(sum)));
  for (int64_t j = 0; j < nkp; j += V::W) V::store(s + j, V::mul(V::load(s + j), inv));
}

/// Keys [begin, end) of query row t: its mask range, or every key.
inline forward::KeyRange row_range(const AttentionHead& a, int64_t t) {
  return a.ranges ? a.ranges[t] : forward::KeyRange{0, static_cast<int32_t>(a.n_kv)};
}

template <class V, int QT>
void attention_head(const AttentionHead& a) {
  const int64_t hd = a.head_dim;
  // The keys any row reads, [lo, hi), lo rounded down to a multiple of 16: a key's column (and so its
  // lane in the softmax sums) is then its index mod 16 in every tile, which keeps each row's result
  // independent of the tile it falls in. Without ranges: [0, n_kv).
  int64_t lo = 0, hi = a.n_kv;
  if (a.ranges) {
    lo = a.n_kv;
    hi = 0;
    for (int64_t t = 0; t < a.n_q; ++t) {
      lo = std::min<int64_t>(lo, a.ranges[t].begin);
      hi = std::max<int64_t>(hi, a.ranges[t].end);
    }
    lo = lo / 16 * 16;
  }
  if (hd % V::W != 0 || hi <= lo) {
    // Not a whole number of vectors per head: the portable row.
    for (int64_t t = 0; t < a.n_q; ++t) {
      const forward::KeyRange r = row_range(a, t);
      attention_row(a.q + t * a.q_stride, a.k + r.begin * a.kv_stride, a.kv_stride,
                    a.v + r.begin * a.kv_stride, a.kv_stride, r.end - r.begin, hd, a.scale, a.scratch,
                    a.out + t * a.out_stride);
    }
    return;
  }
  constexpr int C = 4;  // vectors per tile
  const int64_t nk = hi - lo, nkp = (nk + 15) / 16 * 16;
  float* kt = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(a.scratch) + 63) & ~uintptr_t(63));
  float* sc = kt + hd * nkp;
  // Keys lo .. hi transposed, 16 at a time: each d writes one 64-byte line of kt (key-major order would
  // touch head_dim lines per key, more than L1 holds at 141 keys). Column c of kt is key lo + c.
  const float* k0 = a.k + lo * a.kv_stride;
  for (int64_t j0 = 0; j0 < nk && !a.keys_in_scratch; j0 += 16) {
    const int64_t jn = std::min<int64_t>(16, nk - j0);
    for (int64_t d = 0; d < hd; ++d) {
      float* dst = kt + d * nkp + j0;
      for (int64_t jj = 0; jj < jn; ++jj) dst[jj] = k0[(j0 + jj) * a.kv_stride + d];
    }
  }
  for (int64_t d = 0; d < hd && !a.keys_in_scratch; ++d) {
    for (int64_t j = nk; j < nkp; ++j) kt[d * nkp + j] = 0.0f;
  }
  for (int64_t t0 = 0; t0 < a.n_q; t0 += QT) {
    // A last tile of fewer queries repeats the last query; its extra rows are not stored.
    const int nq = static_cast<int>(std::min<int64_t>(QT, a.n_q - t0));
    const float* qr[QT];
    float* orow[QT];
    float dummy_out[QT][C * V::W];
    forward::KeyRange rr[QT];
    // The tile's columns [c0, c0 + tkp): the keys of its rows, c0 a multiple of 16 (all of kt without
    // ranges).
    int64_t c0 = 0, c1 = nk;
    if (a.ranges) {
      c0 = nk;
      c1 = 0;
    }
    for (int i = 0; i < QT; ++i) {
      const int64_t t = t0 + std::min(i, nq - 1);
      qr[i] = a.q + t * a.q_stride;
      rr[i] = row_range(a, t);
      if (a.ranges) {
        c0 = std::min<int64_t>(c0, rr[i].begin - lo);
        c1 = std::max<int64_t>(c1, rr[i].end - lo);
      }
    }
    c0 = c0 / 16 * 16;
    const int64_t tk = c1 - c0, tkp = (tk + 15) / 16 * 16;
    const float* ktt = kt + c0;
    float* sct = sc + c0;
    // Key vectors in tiles of C, or of 3 when that divides them evenly (141 keys = 9 vectors: three
    // 3-vector tiles instead of 4 + 4 + a 1-vector tile whose QT chains cannot fill the FMA pipes).
    const int64_t n_vec = tkp / V::W;
    int64_t j = 0;
    if (n_vec % C != 0 && n_vec % 3 == 0) {
      for (; j < tkp; j += 3 * V::W) score_tile<V, QT, 3>(qr, ktt + j, nkp, hd, a.scale, sct + j);
    }
    for (; j + C * V::W <= tkp; j += C * V::W) score_tile<V, QT, C>(qr, ktt + j, nkp, hd, a.scale, sct + j);
    switch ((tkp - j) / V::W) {
      case 3:
        score_tile<V, QT, 3>(qr, ktt + j, nkp, hd, a.scale, sct + j);
        break;
      case 2:
        score_tile<V, QT, 2>(qr, ktt + j, nkp, hd, a.scale, sct + j);
        break;
      case 1:
        score_tile<V, QT, 1>(qr, ktt + j, nkp, hd, a.scale, sct + j);
        break;
      default:
        break;
    }
    for (int i = 0; i < QT; ++i) {
      // Columns outside the row's keys (and past the last key) are -inf: e^-inf = 0 adds nothing to
      // the row's sums and weights, so the row comes out as if computed over its keys alone.
      float* s = sct + i * nkp;
      const int64_t b = rr[i].begin - lo - c0, e = rr[i].end - lo - c0;
      for (int64_t jj = 0; jj < b; ++jj) s[jj] = -INFINITY;
      for (int64_t jj = e; jj < tkp; ++jj) s[jj] = -INFINITY;
      softmax_row<V>(s, tkp);
    }
    const float* vt = a.v + (lo + c0) * a.kv_stride;
    int64_t d0 = 0;
    for (; d0 + C * V::W <= hd; d0 += C * V::W) {
      for (int i = 0; i < QT; ++i) orow[i] = i < nq ? a.out + (t0 + i) * a.out_stride + d0 : dummy_out[i];
      pv_tile<V, QT, C>(sct, nkp, vt + d0, a.kv_stride, tk, orow);
    }
    for (; d0 < hd; d0 += V::W) {
      for (int i = 0; i < QT; ++i) orow[i] = i < nq ? a.out + (t0 + i) * a.out_stride + d0 : dummy_out[i];
      pv_tile<V, QT, 1>(sct, nkp, vt + d0, a.kv_stride, tk, orow);
    }
  }
}

}  // namespace
}  // namespace dllm::cpu::simd
