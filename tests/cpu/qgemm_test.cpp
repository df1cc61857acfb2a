// The packed Q4_K / Q5_K / Q6_K / Q8_0 / Q5_0 GEMM (src/cpu/kernels/qgemm_*, make_matrix) on every
// ISA path this CPU supports, plus the AVX-VNNI kernels with their VNNI instructions emulated in AVX2
// (make_matrix_vnni_emulated), which runs the VNNI code paths on CPUs without VNNI, and the AMX tile
// kernels over the scalar emulation of the tile instructions (make_matrix_amx_emulated), which runs
// the tile kernel's packing, indexing and arithmetic on any CPU.
//
// Oracle: an f64 GEMM over the weights as quant::dequantize_row decodes them (the quant library's
// decoder, not the repacking code) and the activations as d * qs (Q8_K for the K-quants, Q8_0 for
// Q8_0 and Q5_0, each made by the quant library's quantizer). The kernels compute exact int32 sums per
// sub-block, so they differ from that only by f32 rounding of a few products per scale block and of
// the sum over the blocks; the bound below is written from that count, and two controls justify it:
// the reference matrices (make_matrix_ref, ggml's generic dot order) stay inside it, and a weight moved
// by one quantization step falls outside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/matmul.h"
#include "cpu/traffic.h"
#include "quant/quant.h"

namespace dllm::cpu {
namespace {

using gguf::GgmlType;
constexpr double kU = 1.0 / (1 << 24);  // f32 unit roundoff

// ---------------------------------------------------------------------------------------------------
// Random weights, encoded into GGUF blocks by an encoder written here from ggml's block layouts, with
// the integer pieces (d, sc, q, dmin, m) kept so the error bound can be computed from them.

struct Weights {
  GgmlType type;
  int64_t n_out = 0, n_in = 0;
  std::vector<uint8_t> bytes;  // GGUF blocks, row-major
  // n_out x n_in: |d sc q| + |dmin m| (Q4_K, Q5_K), |d sc (q - 32)| (Q6_K), |d q| (Q8_0), |d (q - 16)| (Q5_0)
  std::vector<double> pieces;
  std::vector<double> exact;  // n_out x n_in: d sc q - dmin m, d sc (q - 32), d q or d (q - 16), in f64
  gguf::TensorInfo info() const {
    gguf::TensorInfo t;
    t.name = "blk.0.attn_k.weight";
    t.n_dims = 2;
    t.ne[0] = n_in;
    t.ne[1] = n_out;
    t.type = type;
    t.n_bytes = bytes.size();
    return t;
  }
};

// Row magnitudes cycle through 1..7 so a row or scale index mix-up changes results visibly.
float row_magnitude(int64_t row) {
  return float(1 + (row * 5) % 7);
}

Weights random_q4_K(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u6(1, 63), u4(0, 15);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q4_K, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 256;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q4_K));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q4_K*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q4_K& blk = blocks[o * nb + b];
      const uint16_t d16 = quant::fp32_to_fp16(1e-3f * row_magnitude(o) * ud(rng));
      const uint16_t dmin16 = quant::fp32_to_fp16(2e-3f * row_magnitude(o) * ud(rng));
      blk.d = d16;
      blk.dmin = dmin16;
      uint8_t sc[8], m[8], q[256];
      for (int j = 0; j < 8; ++j) {
        sc[j] = uint8_t(u6(rng));  // >= 1, so every weight matters (see the one-step control)
        m[j] = uint8_t(u6(rng) - 1);
      }
      for (int j = 0; j < 4; ++j) {  // ggml get_scale_min_k4, inverted
        blk.scales[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        blk.scales[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        blk.scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
      }
      for (int v = 0; v < 256; ++v) q[v] = uint8_t(u4(rng));
      // Bytes 32c..32c+31 hold values 64c+l (low nibble) and 64c+32+l (high nibble).
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) blk.qs[32 * c + l] = uint8_t(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
      }
      const double d = quant::fp16_to_fp32(d16), dmin = quant::fp16_to_fp32(dmin16);
      for (int v = 0; v < 256; ++v) {
        w.pieces[size_t(o * n_in + b * 256 + v)] =
            std::fabs(d * sc[v / 32] * q[v]) + std::fabs(dmin * m[v / 32]);
        w.exact[size_t(o * n_in + b * 256 + v)] = d * sc[v / 32] * q[v] - dmin * m[v / 32];
      }
    }
  }
  return w;
}

Weights random_q6_K(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u6(0, 63), sc_dist(-128, 127);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q6_K, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 256;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q6_K));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q6_K*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q6_K& blk = blocks[o * nb + b];
      const uint16_t d16 = quant::fp32_to_fp16(1e-4f * row_magnitude(o) * ud(rng));
      blk.d = d16;
      uint8_t q[256];
      for (int j = 0; j < 16; ++j) {
        int s = sc_dist(rng);
        if (s == 0) s = 1;  // every weight matters
        blk.scales[j] = int8_t(s);
      }
      for (int v = 0; v < 256; ++v) q[v] = uint8_t(u6(rng));
      // Per 128-value half n: ql[64n + l] = values l | l+64 (nibbles), ql[64n + 32 + l] = l+32 | l+96,
      // qh[32n + l] = top 2 bits of values l, l+32, l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7.
      for (int n = 0; n < 2; ++n) {
        const uint8_t* v = q + 128 * n;
        for (int l = 0; l < 32; ++l) {
          blk.ql[64 * n + l] = uint8_t((v[l] & 15) | ((v[l + 64] & 15) << 4));
          blk.ql[64 * n + 32 + l] = uint8_t((v[l + 32] & 15) | ((v[l + 96] & 15) << 4));
          blk.qh[32 * n + l] = uint8_t((v[l] >> 4) | ((v[l + 32] >> 4) << 2) | ((v[l + 64] >> 4) << 4) |
                                       ((v[l + 96] >> 4) << 6));
        }
      }
      const double d = quant::fp16_to_fp32(d16);
      for (int v = 0; v < 256; ++v) {
        w.exact[size_t(o * n_in + b * 256 + v)] = d * blk.scales[v / 16] * (int(q[v]) - 32);
        w.pieces[size_t(o * n_in + b * 256 + v)] = std::fabs(w.exact[size_t(o * n_in + b * 256 + v)]);
      }
    }
  }
  return w;
}

// Q5_K: as Q4_K with q = 0..31; bit 4 of value l of sub-block j goes to bit j of qh[l].
Weights random_q5_K(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u6(1, 63), u5(0, 31);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q5_K, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 256;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q5_K));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q5_K*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q5_K& blk = blocks[o * nb + b];
      const uint16_t d16 = quant::fp32_to_fp16(5e-4f * row_magnitude(o) * ud(rng));
      const uint16_t dmin16 = quant::fp32_to_fp16(2e-3f * row_magnitude(o) * ud(rng));
      blk.d = d16;
      blk.dmin = dmin16;
      uint8_t sc[8], m[8], q[256];
      for (int j = 0; j < 8; ++j) {
        sc[j] = uint8_t(u6(rng));
        m[j] = uint8_t(u6(rng) - 1);
      }
      for (int j = 0; j < 4; ++j) {  // ggml get_scale_min_k4, inverted
        blk.scales[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        blk.scales[j + 4] = uint8_t((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        blk.scales[j + 8] = uint8_t((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
      }
      for (int v = 0; v < 256; ++v) q[v] = uint8_t(u5(rng));
      for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l)
          blk.qs[32 * c + l] = uint8_t((q[64 * c + l] & 15) | ((q[64 * c + 32 + l] & 15) << 4));
      }
      for (int l = 0; l < 32; ++l) {
        blk.qh[l] = 0;
        for (int j = 0; j < 8; ++j) blk.qh[l] |= uint8_t((q[32 * j + l] >> 4) << j);
      }
      const double d = quant::fp16_to_fp32(d16), dmin = quant::fp16_to_fp32(dmin16);
      for (int v = 0; v < 256; ++v) {
        w.pieces[size_t(o * n_in + b * 256 + v)] =
            std::fabs(d * sc[v / 32] * q[v]) + std::fabs(dmin * m[v / 32]);
        w.exact[size_t(o * n_in + b * 256 + v)] = d * sc[v / 32] * q[v] - dmin * m[v / 32];
      }
    }
  }
  return w;
}

// Q8_0: an f16 d per 32 values and int8 q over the whole range, -128 included (llama-quantize writes
// -127..127, but the kernels must not depend on it).
Weights random_q8_0(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u8(-128, 127);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q8_0, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 32;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q8_0));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q8_0*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q8_0& blk = blocks[o * nb + b];
      blk.d = quant::fp32_to_fp16(1e-3f * row_magnitude(o) * ud(rng));
      const double d = quant::fp16_to_fp32(blk.d);
      for (int v = 0; v < 32; ++v) {
        blk.qs[v] = int8_t(u8(rng));
        w.exact[size_t(o * n_in + b * 32 + v)] = d * blk.qs[v];
        w.pieces[size_t(o * n_in + b * 32 + v)] = std::fabs(d * blk.qs[v]);
      }
    }
  }
  return w;
}

// Q5_0 (ggml-common.h block_q5_0): an f16 d per 32 values, q = 0..31; byte j of qs holds the 4 low
// bits of value j (low nibble) and of value j + 16 (high nibble), bit i of the little-endian qh
// bit 4 of value i. Weight d (q - 16).
Weights random_q5_0(int64_t n_out, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u5(0, 31);
  std::uniform_real_distribution<float> ud(0.5f, 1.0f);
  Weights w{GgmlType::Q5_0, n_out, n_in, {}, {}, {}};
  const int64_t nb = n_in / 32;
  w.bytes.resize(size_t(n_out * nb) * sizeof(quant::block_q5_0));
  w.pieces.resize(size_t(n_out * n_in));
  w.exact.resize(size_t(n_out * n_in));
  auto* blocks = reinterpret_cast<quant::block_q5_0*>(w.bytes.data());
  for (int64_t o = 0; o < n_out; ++o) {
    for (int64_t b = 0; b < nb; ++b) {
      quant::block_q5_0& blk = blocks[o * nb + b];
      blk.d = quant::fp32_to_fp16(1e-2f * row_magnitude(o) * ud(rng));
      const double d = quant::fp16_to_fp32(blk.d);
      int q[32];
      uint32_t qh = 0;
      for (int v = 0; v < 32; ++v) {
        q[v] = u5(rng);
        qh |= uint32_t(q[v] >> 4) << v;
        w.exact[size_t(o * n_in + b * 32 + v)] = d * (q[v] - 16);
        w.pieces[size_t(o * n_in + b * 32 + v)] = std::fabs(d * (q[v] - 16));
      }
      for (int j = 0; j < 16; ++j) blk.qs[j] = uint8_t((q[j] & 15) | ((q[j + 16] & 15) << 4));
      for (int i = 0; i < 4; ++i) blk.qh[i] = uint8_t(qh >> (8 * i));
    }
  }
  return w;
}

Weights random_weights(GgmlType type, int64_t n_out, int64_t n_in, uint64_t seed) {
  switch (type) {
    case GgmlType::Q5_0:
      return random_q5_0(n_out, n_in, seed);
    case GgmlType::Q4_K:
      return random_q4_K(n_out, n_in, seed);
    case GgmlType::Q5_K:
      return random_q5_K(n_out, n_in, seed);
    case GgmlType::Q8_0:
      return random_q8_0(n_out, n_in, seed);
    default:
      return random_q6_K(n_out, n_in, seed);
  }
}

// True for the types whose kernels multiply Q8_0 activations (Q8_0, Q5_0); the K-quants' multiply Q8_K.
bool q8_0_acts(GgmlType type) {
  return type == GgmlType::Q8_0 || type == GgmlType::Q5_0;
}

// Values per scale block of the activation format the type's kernels multiply (Q8_K or Q8_0).
int64_t act_block(GgmlType type) {
  return q8_0_acts(type) ? 32 : 256;
}

// The weights as the quant library decodes them (f32, as llama.cpp's dequantize_row_* gives them).
std::vector<float> dequantized(const Weights& w) {
  std::vector<float> out(size_t(w.n_out * w.n_in));
  const size_t row_bytes = w.bytes.size() / size_t(w.n_out);
  for (int64_t o = 0; o < w.n_out; ++o) {
    quant::dequantize_row(w.type, w.bytes.data() + size_t(o) * row_bytes, out.data() + o * w.n_in, w.n_in);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Activations: Gaussian rows at per-token scales; every third token is shifted positive (a nonzero
// mean makes the Q4_K / Q5_K min and Q6_K offset terms large), and token 1's second block of 256 is
// all zero (d = 0). Rounded both to Q8_K (when n_in % 256 == 0) and to Q8_0.

struct Acts {
  int64_t n_tokens = 0, n_in = 0;
  std::vector<float> f32;
  std::vector<quant::block_q8_K> q8k;
  std::vector<quant::block_q8_0> q80;
  std::vector<double> deq_k, deq_0;  // d * qs of q8k and q80: the values the kernels really multiply
  // Made once per input, as the forward pass does (view(true)).
  std::vector<int16_t> bs32;
  std::vector<uint8_t> u8k, u80;
  const std::vector<double>& deq(GgmlType type) const { return q8_0_acts(type) ? deq_0 : deq_k; }
  // premade: also the per-input buffers; otherwise every multiply() makes its own.
  Activations view(bool premade = false) const {
    Activations v{f32.data(), q8k.empty() ? nullptr : q8k.data(), n_tokens, n_in};
    v.q8_0 = q80.data();
    if (premade) {
      v.bs32 = bs32.empty() ? nullptr : bs32.data();
      v.q8u = u8k.empty() ? nullptr : u8k.data();
      v.q8_0u = u80.data();
    }
    return v;
  }
};

Acts random_acts(int64_t n_tokens, int64_t n_in, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Acts a;
  a.n_tokens = n_tokens;
  a.n_in = n_in;
  a.f32.resize(size_t(n_tokens * n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float scale = 0.1f * float(1 + t % 5);
    const float shift = t % 3 == 2 ? 2.0f : 0.0f;
    for (int64_t k = 0; k < n_in; ++k) a.f32[size_t(t * n_in + k)] = scale * (nd(rng) + shift);
    if (t == 1 && n_in >= 512) std::fill_n(a.f32.begin() + t * n_in + 256, 256, 0.0f);
  }
  if (n_in % 256 == 0) {
    const int64_t nb = n_in / 256;
    a.q8k.resize(size_t(n_tokens * nb));
    for (int64_t t = 0; t < n_tokens; ++t)
      quant::quantize_row_q8_K(a.f32.data() + t * n_in, a.q8k.data() + t * nb, n_in);
    a.deq_k.resize(a.f32.size());
    for (size_t i = 0; i < a.q8k.size(); ++i) {
      for (int k = 0; k < 256; ++k) a.deq_k[i * 256 + size_t(k)] = double(a.q8k[i].d) * a.q8k[i].qs[k];
    }
    a.bs32.resize(a.q8k.size() * 8);
    qgemm::make_bs32(a.q8k.data(), n_tokens, nb, a.bs32.data());
    a.u8k.resize(a.f32.size());
    qgemm::make_u8(a.q8k.data(), n_tokens, nb, a.u8k.data());
  }
  const int64_t n80 = n_in / 32;
  a.q80.resize(size_t(n_tokens * n80));
  for (int64_t t = 0; t < n_tokens; ++t)
    quant::quantize_row_q8_0(a.f32.data() + t * n_in, a.q80.data() + t * n80, n_in);
  a.deq_0.resize(a.f32.size());
  for (size_t i = 0; i < a.q80.size(); ++i) {
    const double d = quant::fp16_to_fp32(a.q80[i].d);
    for (int k = 0; k < 32; ++k) a.deq_0[i * 32 + size_t(k)] = d * a.q80[i].qs[k];
  }
  a.u80.resize(a.f32.size());
  qgemm::make_u8_q8_0(a.q80.data(), n_tokens, n80, a.u80.data());
  return a;
}

// ---------------------------------------------------------------------------------------------------
// Reference and bound.

struct Reference {
  std::vector<double> y;      // n_tokens x n_out
  std::vector<double> bound;  // n_tokens x n_out
};

// y64 = W x in f64. Bound per output: (n_sb + 8) u sum_k pieces_k |x_k|, n_sb the blocks with a scale
// of their own per row (super-blocks of 256; Q8_0: blocks of 32). Per block a kernel rounds the int32
// -> f32 conversions (exact for Q8_0's sums below 2^24), the products by d, dmin and d_x and their
// difference (<= 4u of the block's pieces); adding n_sb such terms in f32 costs at most (n_sb - 1) u
// of their sum; the f32 weights the reference starts from carry <= 3u of their pieces (0 for Q8_0:
// d q is exact in f32). n_sb + 8 covers all three.
Reference reference(const Weights& w, const Acts& a) {
  const std::vector<float> wf = dequantized(w);
  const std::vector<double>& deq = a.deq(w.type);
  const int64_t n_sb = w.n_in / act_block(w.type);
  Reference r;
  r.y.resize(size_t(a.n_tokens * w.n_out));
  r.bound.resize(r.y.size());
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    const double* x = deq.data() + t * w.n_in;
    for (int64_t o = 0; o < w.n_out; ++o) {
      const float* wr = wf.data() + o * w.n_in;
      const double* pr = w.pieces.data() + o * w.n_in;
      double s = 0, mag = 0;
      for (int64_t k = 0; k < w.n_in; ++k) {
        s += double(wr[k]) * x[k];
        mag += pr[k] * std::fabs(x[k]);
      }
      r.y[size_t(t * w.n_out + o)] = s;
      r.bound[size_t(t * w.n_out + o)] = double(n_sb + 8) * kU * mag;
    }
  }
  return r;
}

// Largest |y - ref| / bound over all outputs (y row stride ldy); > 1 means outside the bound.
double worst_ratio(const std::vector<float>& y, int64_t ldy, const Reference& ref, int64_t n_tokens,
                   int64_t n_out, std::string* where = nullptr) {
  double worst = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t o = 0; o < n_out; ++o) {
      const double got = y[size_t(t * ldy + o)];
      const double want = ref.y[size_t(t * n_out + o)];
      const double ratio = std::isfinite(got) ? std::fabs(got - want) / ref.bound[size_t(t * n_out + o)]
                                              : std::numeric_limits<double>::infinity();
      if (ratio > worst) {
        worst = ratio;
        if (where) {
          *where = "token " + std::to_string(t) + " row " + std::to_string(o) + ": got " +
                   std::to_string(got) + ", f64 " + std::to_string(want) + ", bound " +
                   std::to_string(ref.bound[size_t(t * n_out + o)]);
        }
      }
    }
  }
  return worst;
}

// All rows through `m` in one call per `chunk` rows (chunk a multiple of 16, or 0 = one call);
// premade: with the per-input buffers the forward pass makes (Acts::view).
std::vector<float> run(const Matrix& m, const Acts& a, int64_t ldy, int64_t chunk = 0, bool premade = false) {
  std::vector<float> y(size_t(a.n_tokens * ldy), std::numeric_limits<float>::quiet_NaN());
  const int64_t step = chunk > 0 ? chunk : m.n_out();
  for (int64_t o = 0; o < m.n_out(); o += step)
    m.multiply(a.view(premade), o, std::min(o + step, m.n_out()), y.data(), ldy);
  return y;
}

// ---------------------------------------------------------------------------------------------------

// A kernel path: an Isa through make_matrix, or the AVX-VNNI kernels with emulated VNNI instructions.
// *Compact: make_matrix with WeightLayout::kCompact (Q6_K as Q6KBlock under the path's VNNI kernel).
enum class Path {
  kScalar,
  kAvx2,
  kAvxVnniEmulated,
  kAvxVnni,
  kAvx512Vnni,
  kAmxEmulated,
  kAmx,
  kAvxVnniCompact,
  kAvx512VnniCompact,
};

std::string path_name(Path p) {
  switch (p) {
    case Path::kScalar:
      return "scalar";
    case Path::kAvx2:
      return "avx2";
    case Path::kAvxVnniEmulated:
      return "avxvnni_emulated";
    case Path::kAvxVnni:
      return "avxvnni";
    case Path::kAvx512Vnni:
      return "avx512vnni";
    case Path::kAmxEmulated:
      return "amx_emulated";
    case Path::kAmx:
      return "amx";
    case Path::kAvxVnniCompact:
      return "avxvnni_compact";
    case Path::kAvx512VnniCompact:
      return "avx512vnni_compact";
  }
  return "?";
}

// The Isa whose support a path needs (the VNNI emulation runs on AVX2, the tile emulation anywhere).
Isa path_isa(Path p) {
  switch (p) {
    case Path::kScalar:
    case Path::kAmxEmulated:
      return Isa::kScalar;
    case Path::kAmx:
      return Isa::kAmx;
    case Path::kAvx2:
    case Path::kAvxVnniEmulated:
      return Isa::kAvx2;
    case Path::kAvxVnni:
    case Path::kAvxVnniCompact:
      return Isa::kAvxVnni;
    case Path::kAvx512Vnni:
    case Path::kAvx512VnniCompact:
      return Isa::kAvx512Vnni;
  }
  return Isa::kScalar;
}

std::unique_ptr<Matrix> make_for(Path p, const Weights& w) {
  if (p == Path::kAvxVnniEmulated) return make_matrix_vnni_emulated(w.info(), w.bytes.data());
  if (p == Path::kAmxEmulated) return make_matrix_amx_emulated(w.info(), w.bytes.data());
  const bool compact = p == Path::kAvxVnniCompact || p == Path::kAvx512VnniCompact;
  return make_matrix(w.info(), w.bytes.data(), path_isa(p),
                     compact ? WeightLayout::kCompact : WeightLayout::kFast);
}

struct Param {
  Path path;
  GgmlType type;
};

std::string param_name(const testing::TestParamInfo<Param>& p) {
  return path_name(p.param.path) + "_" + gguf::type_name(p.param.type);
}

class QGemm : public testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!isa_supported(path_isa(GetParam().path))) {
      GTEST_SKIP() << "this CPU/OS does not support the " << isa_name(path_isa(GetParam().path)) << " path ("
                   << describe_isa(best_isa()) << ")";
    }
  }
  Path path() const { return GetParam().path; }
  GgmlType type() const { return GetParam().type; }
  std::unique_ptr<Matrix> make(const Weights& w) const { return make_for(path(), w); }

  // Packs random weights for this ISA, checks them against f64 on `n_tokens` tokens (row ranges of
  // `chunk` rows per call, output row stride n_out + pad) and against make_matrix_ref.
  void check(int64_t n_out, int64_t n_in, int64_t n_tokens, int64_t chunk = 0, int64_t pad = 0) {
    SCOPED_TRACE(std::to_string(n_out) + " x " + std::to_string(n_in) + ", " + std::to_string(n_tokens) +
                 " tokens, chunk " + std::to_string(chunk));
    const Weights w = random_weights(type(), n_out, n_in, uint64_t(n_out * 131 + n_in * 7 + n_tokens));
    const Acts a = random_acts(n_tokens, n_in, uint64_t(n_tokens * 17 + n_in));
    const auto m = make(w);
    ASSERT_TRUE(m->owns_data());
    ASSERT_EQ(m->wants_q8k(), !q8_0_acts(type()));
    ASSERT_EQ(m->wants_q8_0(), q8_0_acts(type()));
    ASSERT_EQ(m->n_out(), n_out);
    ASSERT_EQ(m->n_in(), n_in);
    ASSERT_EQ(m->row_granularity() % qgemm::kRows, 0);  // work items hold whole groups
    const int64_t ldy = n_out + pad;
    const std::vector<float> y = run(*m, a, ldy, chunk);
    // The buffers the forward pass makes once per input give the same bits as those a call makes.
    const std::vector<float> y_premade = run(*m, a, ldy, chunk, true);
    ASSERT_EQ(std::memcmp(y.data(), y_premade.data(), y.size() * sizeof(float)), 0);
    const Reference ref = reference(w, a);
    std::string where;
    const double worst = worst_ratio(y, ldy, ref, n_tokens, n_out, &where);
    RecordProperty("worst_error_over_bound", std::to_string(worst));
    EXPECT_LE(worst, 1.0) << "worst at " << where;
    // Padding columns of y (rows >= n_out) are never written.
    for (int64_t t = 0; t < n_tokens && pad > 0; ++t) {
      for (int64_t o = n_out; o < ldy; ++o) ASSERT_TRUE(std::isnan(y[size_t(t * ldy + o)])) << t << " " << o;
    }
    // Against the reference matrices: both within the bound of the same f64 value.
    const auto r = make_matrix_ref(w.info(), w.bytes.data());
    const std::vector<float> yr = run(*r, a, ldy);
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t o = 0; o < n_out; ++o) {
        const size_t i = size_t(t * ldy + o);
        ASSERT_LE(std::fabs(double(y[i]) - double(yr[i])), 2 * ref.bound[size_t(t * n_out + o)])
            << "token " << t << " row " << o << ": packed " << y[i] << ", make_matrix_ref " << yr[i];
      }
    }
  }
};

TEST_P(QGemm, OneGroupOneToken) {
  check(16, 256, 1);
}

// Every token-tile tail (tiles of 4 tokens: remainders 1, 2, 3) and a row count off the 16-row grid.
TEST_P(QGemm, TokenTails) {
  for (int64_t n_tokens = 1; n_tokens <= 13; ++n_tokens) check(50, 512, n_tokens);
}

// Token counts around the tile kernel's 16-token tiles and 32-token steps (one full and one partial
// token tile, a partial second tile), with 40 rows: a group pair and a lone group.
TEST_P(QGemm, TokenTilesOf16) {
  for (int64_t n_tokens : {15, 16, 17, 31, 32, 33, 47}) check(40, 512, n_tokens);
}

// Dream's attn_k (128 x 3584: 14 super-blocks per row), canvas-sized token counts.
TEST_P(QGemm, DreamAttnK) {
  check(128, 3584, 9);
}

TEST_P(QGemm, LLaDASizedRows) {
  check(64, 4096, 141, 32);
}

// The LM head's 50262 rows (not a multiple of 16) with a 16-row granularity split and ldy > n_out.
TEST_P(QGemm, LmHeadRows) {
  check(50262, 256, 3, 16 * 97, 5);
}

TEST_P(QGemm, SixHundredTokens) {
  check(37, 256, 600);
}

// The attention projections of the mixture-of-experts files: LLaDA-MoE's attn_k / attn_v (Q8_0)
// and attn_output (Q5_K) take 2048 inputs, RND1's attn_output 4096; rows cut as the forward pass does.
TEST_P(QGemm, MoeAttentionRows) {
  check(64, 2048, 141, 32);
}

// Q8_0 / Q5_0 rows need only whole blocks of 32: one block, 3 blocks (96, not a multiple of 256), and
// DiffusionGemma's ffn_down_exps rows (704 = n_ff_exp inputs, Q5_0 in its Q4_K_M files) at one token
// and at a block's 32.
TEST_P(QGemm, RowLengthsOf32) {
  if (!q8_0_acts(type())) GTEST_SKIP() << "rows of a K-quant are whole super-blocks of 256";
  check(16, 32, 1);
  check(50, 96, 7);
  check(45, 704, 1);
  check(45, 704, 32, 32);
}

// Q5_0 packed as Q50Block gives the bits of the same weights converted to Q8_0 (quant::q5_0_to_q8_0)
// and packed as Q80Block on the same path: the kernels decode the same int8 values and run the Q8_0
// arithmetic. (The accuracy oracle is the f64 check above; this pins the equivalence the layout's
// design claims.)
TEST_P(QGemm, Q5_0IsBitIdenticalToItsQ8_0Conversion) {
  if (type() != GgmlType::Q5_0) GTEST_SKIP() << "a Q5_0 property";
  for (int64_t n_tokens : {1, 2, 7, 33}) {
    const Weights w = random_weights(GgmlType::Q5_0, 50, 704, uint64_t(n_tokens));
    const Acts a = random_acts(n_tokens, 704, uint64_t(n_tokens + 100));
    Weights w8{GgmlType::Q8_0, w.n_out, w.n_in, {}, {}, {}};
    w8.bytes.resize(size_t(w.n_out * w.n_in / 32) * sizeof(quant::block_q8_0));
    quant::q5_0_to_q8_0(reinterpret_cast<const quant::block_q5_0*>(w.bytes.data()),
                        reinterpret_cast<quant::block_q8_0*>(w8.bytes.data()), w.n_out * w.n_in);
    const std::vector<float> y5 = run(*make(w), a, w.n_out);
    const std::vector<float> y8 = run(*make(w8), a, w.n_out);
    ASSERT_EQ(std::memcmp(y5.data(), y8.data(), y5.size() * sizeof(float)), 0) << n_tokens << " tokens";
  }
}

// The Q8_0 and Q5_0 kernels of the SIMD paths compute the same exact int32 sum per row, token and
// block (by vpmaddubsw pairs, vpdpbusd on ymm, or on zmm) and then the same f32 steps, acc =
// fma(float(sum), d_w * d_x, acc) block after block (docs/kernels.md), so each path gives the AVX2
// kernel's bits: a Q8_0 / Q5_0 model's tokens do not depend on the SIMD path. (The scalar kernel
// rounds the product before the add.) 40 rows are a group pair and a lone group; the token counts
// cover every token tile and the Q5_0 decode once per pair (more than one tile).
TEST_P(QGemm, Q8_0AndQ5_0GiveTheAvx2KernelsBits) {
  if (!q8_0_acts(type())) GTEST_SKIP() << "a Q8_0 / Q5_0 property";
  if (path() != Path::kAvxVnniEmulated && path() != Path::kAvxVnni && path() != Path::kAvx512Vnni)
    GTEST_SKIP() << "compared: the VNNI paths of the ymm and zmm kernels";
  for (int64_t n_tokens : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 33}) {
    const Weights w = random_weights(type(), 40, 704, uint64_t(n_tokens + 200));
    const Acts a = random_acts(n_tokens, 704, uint64_t(n_tokens + 300));
    const std::vector<float> y = run(*make(w), a, w.n_out, 32);
    const std::vector<float> y2 = run(*make_for(Path::kAvx2, w), a, w.n_out, 32);
    ASSERT_EQ(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)), 0) << n_tokens << " tokens";
  }
}

// The amx path's Q4_K and Q5_K run calls of fewer than kTileMinTokens tokens on the AVX-512 kernel
// and the rest on tiles; both compute the same exact int32 S and M per row, token and super-block and
// then the same f32 steps (docs/kernels.md, "Intel AMX tiles"), so a token's result does not depend
// on how many tokens its call had: the exact K/V caches and the windowed forward pass rely on that.
// 40 rows are a group pair and a lone group; the token counts cover both kernels, one and two token
// tiles, and more than 32 (each group unpacked once for all its token steps).
TEST_P(QGemm, AmxKQuantsGiveTheAvx512KernelsBits) {
  if ((type() != GgmlType::Q4_K && type() != GgmlType::Q5_K) || path() != Path::kAmx)
    GTEST_SKIP() << "the amx path's Q4_K and Q5_K";
  for (int64_t n_tokens : {1, 6, 7, 16, 17, 32, 33, 50}) {
    const Weights w = random_weights(type(), 40, 1024, uint64_t(n_tokens + 400));
    const Acts a = random_acts(n_tokens, 1024, uint64_t(n_tokens + 500));
    const std::vector<float> y = run(*make(w), a, w.n_out, 32);
    const std::vector<float> y2 = run(*make_for(Path::kAvx512Vnni, w), a, w.n_out, 32);
    ASSERT_EQ(std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)), 0) << n_tokens << " tokens";
  }
}

// The AVX-512 path's compact Q6_K kernel (zmm, gemm_q6_K_avx512) computes the exact int32 S of the
// ymm kernel the AVX-VNNI path runs over the same Q6KBlock groups (gemm_q6_K_avx512ymm is that
// template under the AVX-512 flags) and then its f32 steps, so the two give the same bits: a MoE
// model's tokens do not depend on which of the two ran its compact experts. 40 rows are a group pair
// and a lone group; the token counts cover one token tile (unpacked in registers) and several (the
// first tile's unpacked lines loaded by the others), and a row range that starts inside a group.
TEST(QGemmKernels, CompactQ6KZmmGivesTheYmmKernelsBits) {
  if (!isa_supported(Isa::kAvx512Vnni)) GTEST_SKIP() << "needs AVX-512 VNNI";
  for (int64_t n_tokens : {1, 2, 3, 4, 5, 8, 9, 16, 33}) {
    const Weights w = random_weights(GgmlType::Q6_K, 40, 1024, uint64_t(n_tokens + 600));
    const Acts a = random_acts(n_tokens, 1024, uint64_t(n_tokens + 700));
    const auto packed =
        qgemm::pack_q6_K(reinterpret_cast<const quant::block_q6_K*>(w.bytes.data()), 40, 1024);
    for (const int64_t o_begin : {int64_t{0}, int64_t{5}}) {
      std::vector<float> y[2];
      int k = 0;
      for (const auto kernel : {qgemm::gemm_q6_K_avx512, qgemm::gemm_q6_K_avx512ymm}) {
        y[k].assign(size_t(n_tokens * 40), 0.0f);
        qgemm::GemmArgs g;
        g.w = packed.get();
        g.n_sb = 1024 / 256;
        g.g_begin = o_begin / qgemm::kRows;
        g.g_end = g.n_groups = 3;
        g.x = a.q8k.data();
        g.n_tokens = n_tokens;
        g.y = y[k].data();
        g.ldy = 40;
        g.o_begin = o_begin;
        g.o_end = 40;
        kernel(g);
        ++k;
      }
      ASSERT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)), 0)
          << n_tokens << " tokens, rows from " << o_begin;
    }
  }
}

// Row ranges split on 16-row boundaries compute the same values, bit for bit, as one call, and
// never write outside their range (the forward pass runs them from several threads).
TEST_P(QGemm, RowRangesAreIndependentAndExact) {
  const Weights w = random_weights(type(), 100, 512, 3);
  const Acts a = random_acts(7, 512, 4);
  const auto m = make(w);
  const std::vector<float> whole = run(*m, a, 100);
  std::vector<float> part(whole.size(), std::numeric_limits<float>::quiet_NaN());
  m->multiply(a.view(), 32, 80, part.data(), 100);
  for (int64_t t = 0; t < 7; ++t) {
    for (int64_t o = 0; o < 100; ++o) {
      const float v = part[size_t(t * 100 + o)];
      if (o >= 32 && o < 80) {
        ASSERT_EQ(std::memcmp(&v, &whole[size_t(t * 100 + o)], 4), 0) << t << " " << o;
      } else {
        ASSERT_TRUE(std::isnan(v)) << "row " << o << " outside [32, 80) was written";
      }
    }
  }
  std::vector<float> threaded(whole.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t o = 0; o < 100; o += 16)
    m->multiply(a.view(), o, std::min<int64_t>(o + 16, 100), threaded.data(), 100);
  ASSERT_EQ(std::memcmp(threaded.data(), whole.data(), whole.size() * 4), 0);
}

// Control 1 (the bound is not too tight): the reference matrices, whose float order is ggml's,
// stay inside it. Control 2 (the bound is tight enough): one weight moved by one quantization step
// puts that row outside it, so an off-by-one nibble, a missing zero point or a wrong scale would too.
TEST_P(QGemm, BoundControls) {
  const int64_t n_out = 32, n_in = 1024, n_tokens = 6;
  Weights w = random_weights(type(), n_out, n_in, 11);
  const Acts a = random_acts(n_tokens, n_in, 12);
  const Reference ref = reference(w, a);
  const auto r = make_matrix_ref(w.info(), w.bytes.data());
  EXPECT_LE(worst_ratio(run(*r, a, n_out), n_out, ref, n_tokens, n_out), 1.0);
  // Row 5, super-block 2, first byte of its quants: the low nibble / 4 low bits of value 0 change by 1.
  const int64_t nb = n_in / 256;
  if (type() == GgmlType::Q4_K) {
    auto* blk = reinterpret_cast<quant::block_q4_K*>(w.bytes.data()) + 5 * nb + 2;
    blk->qs[0] ^= 1;
  } else if (type() == GgmlType::Q5_K) {
    auto* blk = reinterpret_cast<quant::block_q5_K*>(w.bytes.data()) + 5 * nb + 2;
    blk->qs[0] ^= 1;
  } else if (type() == GgmlType::Q8_0) {  // row 5, value 512 (block 16)
    auto* blk = reinterpret_cast<quant::block_q8_0*>(w.bytes.data()) + 5 * (n_in / 32) + 16;
    blk->qs[0] ^= 1;
  } else if (type() == GgmlType::Q5_0) {  // row 5, value 512 (block 16)
    auto* blk = reinterpret_cast<quant::block_q5_0*>(w.bytes.data()) + 5 * (n_in / 32) + 16;
    blk->qs[0] ^= 1;
  } else {
    auto* blk = reinterpret_cast<quant::block_q6_K*>(w.bytes.data()) + 5 * nb + 2;
    blk->ql[0] ^= 1;
  }
  const auto m = make(w);
  const std::vector<float> y = run(*m, a, n_out);
  double worst_row5 = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    worst_row5 = std::max(worst_row5, std::fabs(y[size_t(t * n_out + 5)] - ref.y[size_t(t * n_out + 5)]) /
                                          ref.bound[size_t(t * n_out + 5)]);
  }
  EXPECT_GT(worst_row5, 1.0) << "a one-step weight change went unnoticed";
}

std::vector<Param> all_params() {
  std::vector<Param> v;
  for (Path p : {Path::kScalar, Path::kAvx2, Path::kAvxVnniEmulated, Path::kAvxVnni, Path::kAvx512Vnni,
                 Path::kAmxEmulated, Path::kAmx}) {
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q5_0})
      v.push_back({p, t});
  }
  // The compact layout changes only Q6_K.
  for (Path p : {Path::kAvxVnniCompact, Path::kAvx512VnniCompact}) v.push_back({p, GgmlType::Q6_K});
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllPaths, QGemm, testing::ValuesIn(all_params()), param_name);

// The test's own encoder agrees with the quant library's decoder, so `pieces` describes the weights
// the reference multiplies: |decoded - (d sc q - dmin m)| is within f32 rounding (3 roundings) of the
// pieces.
TEST(QGemmGenerator, EncoderMatchesQuantDecoder) {
  for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q5_0}) {
    const Weights w = random_weights(type, 3, 512, 5);
    const std::vector<float> f = dequantized(w);
    for (size_t i = 0; i < f.size(); ++i) ASSERT_LE(std::fabs(f[i] - w.exact[i]), 3 * kU * w.pieces[i]) << i;
  }
}

// The packed layouts stay close to the GGUF sizes (the model must fit in about its file size).
TEST(QGemmLayout, PackedSizeNearGgufSize) {
  const double q4 = double(sizeof(qgemm::Q4KBlock)) / (qgemm::kRows * sizeof(quant::block_q4_K));
  const double q6 = double(sizeof(qgemm::Q6KBlock)) / (qgemm::kRows * sizeof(quant::block_q6_K));
  EXPECT_LT(q4, 1.03);  // 4.625 vs 4.5 bits per weight
  EXPECT_LT(q6, 1.01);  // 6.625 vs 6.5625
  // The byte layouts trade memory for loads without unpacking (docs/kernels.md): Q8_0 9 vs 8.5 bits,
  // Q5_K 8.625 vs 5.5 (these are the attention projections of mixture-of-experts files only).
  const double q80 = double(sizeof(qgemm::Q80Block)) / (qgemm::kRows * sizeof(quant::block_q8_0));
  const double q5 = double(sizeof(qgemm::Q5KBlock)) / (qgemm::kRows * sizeof(quant::block_q5_K));
  EXPECT_LT(q80, 1.06);
  EXPECT_LT(q5, 1.57);
  // Q5_0 keeps its nibbles and bit plane: 6 vs 5.5 bits (Q80Block would be 9).
  const double q50 = double(sizeof(qgemm::Q50Block)) / (qgemm::kRows * sizeof(quant::block_q5_0));
  EXPECT_LT(q50, 1.1);
}

// Traffic counting (cpu/traffic.h): a multiply over rows [o_begin, o_end) counts that share of the
// stored weight bytes (here the layouts' block sizes from docs/kernels.md: 16 rows x 256 weights in
// 3392 bytes as Q6KBlock, 4480 as Q6K8Block; the reference matrix reads the GGUF's 210 per row and
// 256 weights; Q5_0 below) and rows x n_in x tokens multiply-adds; off, nothing.
TEST(QGemmTraffic, CountsTheStoredBytesAndTheMultiplyAdds) {
  const Weights w = random_weights(GgmlType::Q6_K, 40, 512, 9);  // 3 groups of 16 rows, 2 super-blocks
  const Acts a = random_acts(3, 512, 10);
  std::vector<float> y(size_t(3 * 40));
  struct Case {
    std::unique_ptr<Matrix> m;
    uint64_t bytes;
  };
  std::vector<Case> cases;
  cases.push_back({make_matrix_ref(w.info(), w.bytes.data()), 40 * 2 * 210});
  if (isa_supported(Isa::kAvx512Vnni)) {
    cases.push_back(
        {make_matrix(w.info(), w.bytes.data(), Isa::kAvx512Vnni, WeightLayout::kCompact), 3 * 2 * 3392});
    cases.push_back(
        {make_matrix(w.info(), w.bytes.data(), Isa::kAvx512Vnni, WeightLayout::kFast), 3 * 2 * 4480});
  }
  // Q5_0: 16 rows x 32 weights in 384 bytes as Q50Block; 576 as Q80Block where the AMX paths convert
  // it to Q8_0.
  const Weights w5 = random_weights(GgmlType::Q5_0, 40, 512, 9);  // 3 groups, 16 blocks of 32
  cases.push_back({make_matrix(w5.info(), w5.bytes.data(), Isa::kScalar), 3 * 16 * 384});
  cases.push_back({make_matrix_amx_emulated(w5.info(), w5.bytes.data()), 3 * 16 * 576});
  for (const Case& c : cases) {
    EXPECT_EQ(c.m->weight_bytes(), c.bytes);
    set_traffic_counting(false);
    const Traffic t0 = traffic_totals();
    c.m->multiply(a.view(false), 0, 40, y.data(), 40);
    EXPECT_EQ(traffic_totals().weight_bytes, t0.weight_bytes);
    set_traffic_counting(true);
    c.m->multiply(a.view(false), 0, 40, y.data(), 40);
    c.m->multiply(a.view(false), 8, 18, y.data(), 40);  // a quarter of the rows
    set_traffic_counting(false);
    const Traffic t1 = traffic_totals();
    EXPECT_EQ(t1.weight_bytes - t0.weight_bytes, c.bytes + c.bytes / 4);
    EXPECT_EQ(t1.macs - t0.macs, uint64_t{(40 + 10) * 512 * 3});
  }
}

// decode_row (DiffusionGemma's self-conditioning reads the tied token_embd through it): a Q6K8Block
// matrix gives every row, the last group's partial one included, and column ranges of it, bit for bit
// as the GGUF decoder; layouts that cannot decode say so.
TEST(QGemmDecodeRow, Q6K8RowsAreTheGgufDecodersBitForBit) {
  const Weights w = random_weights(GgmlType::Q6_K, 40, 512, 11);  // 3 groups of 16 rows, the last 8
  std::vector<float> want(512), got(512);
  for (const Isa isa : {Isa::kAvx2, Isa::kAvx512Vnni}) {
    if (!isa_supported(isa)) continue;
    const auto m = make_matrix(w.info(), w.bytes.data(), isa, WeightLayout::kFast);
    for (int64_t o = 0; o < 40; ++o) {
      quant::dequantize_row(GgmlType::Q6_K, w.bytes.data() + o * 2 * sizeof(quant::block_q6_K), want.data(),
                            512);
      ASSERT_TRUE(m->decode_row(o, got.data())) << isa_name(isa);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), 512 * sizeof(float)), 0)
          << isa_name(isa) << " row " << o;
      // Column ranges: across the super-block boundary, inside one sub-block, ends off the 16-grid.
      for (const auto& [j0, j1] :
           {std::pair<int64_t, int64_t>{224, 288}, {256, 512}, {16, 32}, {3, 37}, {500, 512}}) {
        std::vector<float> part(static_cast<size_t>(j1 - j0) + 1, -7.0f);
        ASSERT_TRUE(m->decode_row(o, j0, j1, part.data())) << isa_name(isa);
        ASSERT_EQ(std::memcmp(want.data() + j0, part.data(), (j1 - j0) * sizeof(float)), 0)
            << isa_name(isa) << " row " << o << " columns [" << j0 << ", " << j1 << ")";
        ASSERT_EQ(part.back(), -7.0f) << "wrote past column " << j1;
      }
    }
  }
  EXPECT_FALSE(make_matrix_ref(w.info(), w.bytes.data())->decode_row(0, got.data()));
  if (isa_supported(Isa::kAvx512Vnni)) {
    EXPECT_FALSE(make_matrix(w.info(), w.bytes.data(), Isa::kAvx512Vnni, WeightLayout::kCompact)
                     ->decode_row(0, got.data()));
  }
}

// Types without a packed kernel go to the reference matrices.
TEST(QGemmDispatch, OtherTypesUseReferenceMatrices) {
  std::vector<float> data(256 * 2, 0.5f);
  gguf::TensorInfo t;
  t.name = "blk.0.attn_norm.weight";
  t.n_dims = 2;
  t.ne[0] = 256;
  t.ne[1] = 2;
  t.type = GgmlType::F32;
  const auto m = make_matrix(t, reinterpret_cast<const uint8_t*>(data.data()), best_isa());
  EXPECT_FALSE(m->wants_q8k());
}

// Types without matrix kernels, and rows that are not whole blocks, are refused with the message
// make_matrix documents.
TEST(QGemmDispatch, RefusesWithAClearMessage) {
  std::vector<uint8_t> data(4096, 0);
  gguf::TensorInfo t;
  t.name = "blk.0.attn_k.weight";
  t.n_dims = 2;
  t.ne[0] = 64;
  t.ne[1] = 2;
  auto message = [&](GgmlType type, int64_t n_in) {
    t.type = type;
    t.ne[0] = n_in;
    try {
      make_matrix(t, data.data(), Isa::kScalar);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(GgmlType::Q4_0, 64),
            "tensor blk.0.attn_k.weight is Q4_0: matrix kernels exist for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, F32, "
            "F16, BF16");
  EXPECT_EQ(message(GgmlType::Q8_0, 48),
            "tensor blk.0.attn_k.weight: row length 48 is not a multiple of 32, as Q8_0 requires");
  EXPECT_EQ(message(GgmlType::Q5_K, 288),
            "tensor blk.0.attn_k.weight: row length 288 is not a multiple of 256, as Q5_K requires");
  EXPECT_EQ(message(GgmlType::Q5_0, 48),
            "tensor blk.0.attn_k.weight: row length 48 is not a multiple of 32, as Q5_0 requires");
  EXPECT_EQ(message(GgmlType::Q8_0, 64), "(no error)");
  EXPECT_EQ(message(GgmlType::Q5_0, 64), "(no error)");
}

}  // namespace
}  // namespace dllm::cpu
