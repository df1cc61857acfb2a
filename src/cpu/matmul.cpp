// make_matrix: picks the kernel for a weight type and ISA. Q4_K, Q5_K, Q6_K, Q8_0 and Q5_0 weights are
// repacked into the interleaved 16-row layouts of cpu/kernels/qgemm.h and cpu/kernels/qgemm_bytes.h and
// multiplied by the kernel of the chosen ISA (scalar, AVX2, AVX-VNNI, AVX-512 VNNI, AMX); every other type
// uses the portable reference matrices (matmul_ref.cpp).
#include "cpu/matmul.h"

#include <emmintrin.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/kernels/qgemm_tiles.h"
#include "cpu/traffic.h"
#include "quant/quant.h"

namespace dllm::cpu {

namespace {

using Kernel = void (*)(const qgemm::GemmArgs&);

// The kernel of each packed layout for one path. q6_K8: Q6_K uses the Q6K8Block byte layout (the
// AVX-512 and AMX paths); u8: the Q8_0 kernel multiplies the activations + 128 (the VNNI paths);
// q6_K8_u8: the Q6K8Block kernel does too (AVX-512; the tiles multiply signed bytes). q6_K_compact: the
// path's Q6KBlock kernel for WeightLayout::kCompact, where it has one at VNNI speed (else nullptr).
// q5_0: the path's Q50Block kernel; nullptr: Q5_0 is converted to Q8_0 exactly and packed as Q80Block
// (the emulated tiles, whose kernel reads Q80Block lines as stored). The amx path is avx512vnni with
// Q4_K and Q5_K on tiles: the tile kernel of Q6_K and Q8_0 measured slower than their AVX-512 ones
// (docs/kernels.md, "Intel AMX tiles"), so it runs only in the emulated set the tests use.
struct KernelSet {
  Kernel q4_K, q5_K, q6_K, q8_0;
  bool q6_K8 = false, u8 = false, q6_K8_u8 = true;
  Kernel q6_K_compact = nullptr;
  Kernel q5_0 = nullptr;
};

KernelSet kernel_set(Isa isa) {
  using namespace qgemm;
  switch (isa) {
    case Isa::kAvx2:
      return {gemm_q4_K_avx2, gemm_q5_K_avx2, gemm_q6_K8_avx2, gemm_q8_0_avx2, true,
              false,          true,           nullptr,         gemm_q5_0_avx2};
    case Isa::kAvxVnni:
      return {gemm_q4_K_avxvnni, gemm_q5_K_avxvnni, gemm_q6_K_avxvnni, gemm_q8_0_avxvnni, false, true, true,
              gemm_q6_K_avxvnni, gemm_q5_0_avxvnni};
    case Isa::kAvx512Vnni:
      return {gemm_q4_K_avx512, gemm_q5_K_avx512, gemm_q6_K8_avx512, gemm_q8_0_avx512, true, true, true,
              gemm_q6_K_avx512, gemm_q5_0_avx512};
    case Isa::kAmx:
      return {gemm_q4_K_amx, gemm_q5_K_amx, gemm_q6_K8_avx512, gemm_q8_0_avx512, true,
              true,          true,          gemm_q6_K_avx512,  gemm_q5_0_avx512};
    case Isa::kScalar:
      break;
  }
  return {gemm_q4_K_scalar, gemm_q5_K_scalar, gemm_q6_K_scalar, gemm_q8_0_scalar, false, false, true,
          nullptr,          gemm_q5_0_scalar};
}

// A Q4_K, Q5_K, Q6_K, Q8_0 or Q5_0 matrix repacked into 16-row groups (Block = Q4KBlock, Q5KBlock,
// Q6KBlock, Q6K8Block, Q80Block or Q50Block). Owns its weights, so the GGUF mapping's pages can be
// released after construction.
template <typename Block>
class PackedMatrix final : public Matrix {
  // Blocks of 32 weights times Q8_0 activations (Q80Block, Q50Block); the others: super-blocks of 256
  // times Q8_K.
  static constexpr bool kQ8_0 =
      std::is_same_v<Block, qgemm::Q80Block> || std::is_same_v<Block, qgemm::Q50Block>;
  static constexpr bool kBs32 =
      std::is_same_v<Block, qgemm::Q4KBlock> || std::is_same_v<Block, qgemm::Q5KBlock>;
  static constexpr bool kQ6K8 = std::is_same_v<Block, qgemm::Q6K8Block>;

 public:
  // u8: the kernel reads the activations + 128 (GemmArgs::xu8); Q8_0, Q5_0 and Q6K8Block only.
  PackedMatrix(int64_t n_out, int64_t n_in, qgemm::AlignedArray<Block> blocks, Kernel kernel, bool u8)
      : Matrix(n_out, n_in), blocks_(std::move(blocks)), kernel_(kernel), u8_(u8) {}

  bool wants_q8k() const override { return !kQ8_0; }
  bool wants_q8u() const override { return kQ6K8 && u8_; }
  bool wants_q8_0() const override { return kQ8_0; }
  bool wants_q8_0u() const override { return kQ8_0 && u8_; }
  // Two 16-row groups: the SIMD kernels' widest tile (one activation broadcast feeds both).
  int64_t row_granularity() const override { return 2 * qgemm::kRows; }
  bool owns_data() const override { return true; }

  bool decode_row(int64_t o, int64_t j0, int64_t j1, float* dst) const override {
    if constexpr (kQ6K8) {
      // Q6K8Block (cpu/kernels/qgemm.h): value 32s + 16h + 4p + b of row r at q[s][p][h][r][b] (q - 32),
      // scale sc[2s + h] at scales[s][r][h], d as f32: d * sc * (q - 32) as quant's decoder. One
      // 16-value sub-block at a time (its 4 lines' 4 bytes of row r, widened in SSE2, x86-64's
      // baseline), the ends of [j0, j1) through a copy of the first and last.
      const int64_t r = o % qgemm::kRows, n_sb = n_in_ / quant::kQK_K;
      const qgemm::Q6K8Block* b = blocks_.get() + o / qgemm::kRows * n_sb;
      for (int64_t j = j0 / 16 * 16; j < j1; j += 16) {
        const qgemm::Q6K8Block& blk = b[j / quant::kQK_K];
        const int s = static_cast<int>(j % quant::kQK_K) / 32, h = static_cast<int>(j % 32) / 16;
        int32_t line[4];
        for (int p = 0; p < 4; ++p) std::memcpy(&line[p], blk.q[s][p][h][r], 4);
        const __m128i q8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(line));
        const __m128i q16[2] = {_mm_srai_epi16(_mm_unpacklo_epi8(q8, q8), 8),
                                _mm_srai_epi16(_mm_unpackhi_epi8(q8, q8), 8)};
        const __m128 dj = _mm_set1_ps(blk.d[r] * static_cast<float>(blk.scales[s][r][h]));
        alignas(16) float v[16];
        for (int i = 0; i < 4; ++i) {
          const __m128i w =
              i % 2 ? _mm_unpackhi_epi16(q16[i / 2], q16[i / 2]) : _mm_unpacklo_epi16(q16[i / 2], q16[i / 2]);
          _mm_store_ps(v + 4 * i, _mm_mul_ps(dj, _mm_cvtepi32_ps(_mm_srai_epi32(w, 16))));
        }
        const int64_t lo = std::max(j, j0), hi = std::min(j + 16, j1);
        if (hi - lo == 16) {
          for (int i = 0; i < 4; ++i) _mm_storeu_ps(dst + (j - j0) + 4 * i, _mm_load_ps(v + 4 * i));
          continue;
        }
        for (int64_t x = lo; x < hi; ++x) dst[x - j0] = v[x - j];
      }
      return true;
    }
    return Matrix::decode_row(o, j0, j1, dst);
  }

  uint64_t weight_bytes() const override {
    const int64_t n_sb = n_in_ / (kQ8_0 ? quant::kQK8_0 : quant::kQK_K);
    return static_cast<uint64_t>((n_out_ + qgemm::kRows - 1) / qgemm::kRows * n_sb) * sizeof(Block);
  }

  void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                     int64_t ldy) const override {
    o_end = std::min(o_end, n_out_);
    if (o_begin >= o_end || x.n_tokens <= 0) return;
    qgemm::GemmArgs a;
    a.w = blocks_.get();
    a.n_sb = n_in_ / (kQ8_0 ? quant::kQK8_0 : quant::kQK_K);
    a.g_begin = o_begin / qgemm::kRows;
    a.g_end = (o_end + qgemm::kRows - 1) / qgemm::kRows;
    a.n_groups = (n_out_ + qgemm::kRows - 1) / qgemm::kRows;
    a.x = x.q8k;
    a.n_tokens = x.n_tokens;
    a.y = y;
    a.ldy = ldy;
    a.o_begin = o_begin;
    a.o_end = o_end;
    if constexpr (kBs32) {
      if (x.bs32 != nullptr) {
        a.bs32 = x.bs32;
      } else {
        // Sums of 32 activations for the min term, per call (the forward pass makes them once per
        // input instead): a few adds per 32 inputs.
        thread_local std::vector<int16_t> bs32;
        bs32.resize(size_t(x.n_tokens * a.n_sb * 8));
        qgemm::make_bs32(x.q8k, x.n_tokens, a.n_sb, bs32.data());
        a.bs32 = bs32.data();
      }
    }
    if (kQ6K8 && u8_) {
      if (x.q8u != nullptr) {
        a.xu8 = x.q8u;
      } else {
        // The unsigned activation bytes, per call when the caller did not make them once per input.
        thread_local std::vector<uint8_t> xu8;
        xu8.resize(size_t(x.n_tokens * n_in_));
        qgemm::make_u8(x.q8k, x.n_tokens, a.n_sb, xu8.data());
        a.xu8 = xu8.data();
      }
    }
    if constexpr (kQ8_0) {
      // The Q8_0 rounding of the input (and its unsigned bytes), per call when the caller did not
      // make them once per input.
      thread_local std::vector<quant::block_q8_0> q80;
      thread_local std::vector<uint8_t> q80u;
      a.x80 = x.q8_0;
      if (a.x80 == nullptr) {
        q80.resize(size_t(x.n_tokens * a.n_sb));
        for (int64_t t = 0; t < x.n_tokens; ++t)
          quant::quantize_row_q8_0(x.f32 + t * n_in_, q80.data() + t * a.n_sb, n_in_);
        a.x80 = q80.data();
      }
      if (u8_) {
        a.xu8 = x.q8_0 != nullptr ? x.q8_0u : nullptr;
        if (a.xu8 == nullptr) {
          q80u.resize(size_t(x.n_tokens * n_in_));
          qgemm::make_u8_q8_0(a.x80, x.n_tokens, a.n_sb, q80u.data());
          a.xu8 = q80u.data();
        }
      }
    }
    kernel_(a);
  }

 private:
  qgemm::AlignedArray<Block> blocks_;
  Kernel kernel_;
  bool u8_;
};

bool packed_type(gguf::GgmlType type) {
  using gguf::GgmlType;
  return type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ||
         type == GgmlType::Q8_0 || type == GgmlType::Q5_0;
}

// make_matrix for the packed types over `k`; nullptr for the other types.
std::unique_ptr<Matrix> make_packed(const gguf::TensorInfo& tensor, const uint8_t* data, const KernelSet& k,
                                    WeightLayout layout) {
  using gguf::GgmlType;
  const GgmlType type = tensor.type;
  if (!packed_type(type)) return nullptr;
  const int64_t n_in = tensor.ne[0];
  const int64_t n_out = tensor.ne[1] * tensor.ne[2] * tensor.ne[3];
  const int64_t block = type == GgmlType::Q8_0 || type == GgmlType::Q5_0 ? quant::kQK8_0 : quant::kQK_K;
  if (n_in <= 0 || n_in % block != 0) {
    throw Error("tensor " + tensor.name + ": row length " + std::to_string(n_in) + " is not a multiple of " +
                std::to_string(block) + ", as " + gguf::type_name(type) + " requires");
  }
  switch (type) {
    case GgmlType::Q4_K: {
      auto blocks = qgemm::pack_q4_K(reinterpret_cast<const quant::block_q4_K*>(data), n_out, n_in);
      return std::make_unique<PackedMatrix<qgemm::Q4KBlock>>(n_out, n_in, std::move(blocks), k.q4_K, false);
    }
    case GgmlType::Q5_K: {
      auto blocks = qgemm::pack_q5_K(reinterpret_cast<const quant::block_q5_K*>(data), n_out, n_in);
      return std::make_unique<PackedMatrix<qgemm::Q5KBlock>>(n_out, n_in, std::move(blocks), k.q5_K, false);
    }
    case GgmlType::Q8_0: {
      auto blocks = qgemm::pack_q8_0(reinterpret_cast<const quant::block_q8_0*>(data), n_out, n_in);
      return std::make_unique<PackedMatrix<qgemm::Q80Block>>(n_out, n_in, std::move(blocks), k.q8_0, k.u8);
    }
    case GgmlType::Q5_0: {
      const auto* src = reinterpret_cast<const quant::block_q5_0*>(data);
      if (k.q5_0 != nullptr) {
        auto blocks = qgemm::pack_q5_0(src, n_out, n_in);
        return std::make_unique<PackedMatrix<qgemm::Q50Block>>(n_out, n_in, std::move(blocks), k.q5_0, k.u8);
      }
      // Q5_0 values are Q8_0 values (quant::q5_0_to_q8_0, exact): converted once, then packed as Q8_0,
      // which the packing copies.
      std::vector<quant::block_q8_0> q8(static_cast<size_t>(n_out * (n_in / quant::kQK8_0)));
      quant::q5_0_to_q8_0(src, q8.data(), n_out * n_in);
      auto blocks = qgemm::pack_q8_0(q8.data(), n_out, n_in);
      return std::make_unique<PackedMatrix<qgemm::Q80Block>>(n_out, n_in, std::move(blocks), k.q8_0, k.u8);
    }
    default:
      break;
  }
  const bool compact = layout == WeightLayout::kCompact && k.q6_K_compact != nullptr;
  if (k.q6_K8 && !compact) {
    // The byte layout: 1.3x the bytes of Q6KBlock, but the kernel no longer spends most of its
    // instructions unpacking (docs/kernels.md).
    auto blocks = qgemm::pack_q6_K8(reinterpret_cast<const quant::block_q6_K*>(data), n_out, n_in);
    return std::make_unique<PackedMatrix<qgemm::Q6K8Block>>(n_out, n_in, std::move(blocks), k.q6_K,
                                                            k.q6_K8_u8);
  }
  auto blocks = qgemm::pack_q6_K(reinterpret_cast<const quant::block_q6_K*>(data), n_out, n_in);
  return std::make_unique<PackedMatrix<qgemm::Q6KBlock>>(n_out, n_in, std::move(blocks),
                                                         compact ? k.q6_K_compact : k.q6_K, false);
}

}  // namespace

void Matrix::multiply(const Activations& x, int64_t o_begin, int64_t o_end, float* y, int64_t ldy) const {
  if (traffic_counting() && o_end > o_begin && n_out_ > 0) {
    const auto rows = static_cast<uint64_t>(std::min(o_end, n_out_) - o_begin);
    count_traffic(weight_bytes() * rows / static_cast<uint64_t>(n_out_),
                  rows * static_cast<uint64_t>(n_in_) * static_cast<uint64_t>(x.n_tokens));
  }
  multiply_rows(x, o_begin, o_end, y, ldy);
}

std::unique_ptr<Matrix> make_matrix(const gguf::TensorInfo& tensor, const uint8_t* data, Isa isa,
                                    WeightLayout layout) {
  if (!packed_type(tensor.type)) return make_matrix_ref(tensor, data);
  if (!isa_supported(isa)) {
    throw Error("tensor " + tensor.name + ": kernel path " + isa_name(isa) +
                " is not supported by this CPU; use --isa auto");
  }
  return make_packed(tensor, data, kernel_set(isa), layout);
}

std::unique_ptr<Matrix> make_matrix_vnni_emulated(const gguf::TensorInfo& tensor, const uint8_t* data) {
  if (!packed_type(tensor.type)) return make_matrix_ref(tensor, data);
  if (!isa_supported(Isa::kAvx2)) {
    throw Error("tensor " + tensor.name + ": the emulated VNNI kernels need AVX2, which this CPU lacks");
  }
  using namespace qgemm;
  return make_packed(tensor, data,
                     KernelSet{gemm_q4_K_vnniemu, gemm_q5_K_vnniemu, gemm_q6_K_vnniemu, gemm_q8_0_vnniemu,
                               false, true, true, nullptr, gemm_q5_0_vnniemu},
                     WeightLayout::kFast);
}

std::unique_ptr<Matrix> make_matrix_amx_emulated(const gguf::TensorInfo& tensor, const uint8_t* data) {
  if (!packed_type(tensor.type)) return make_matrix_ref(tensor, data);
  using namespace qgemm;
  return make_packed(
      tensor, data,
      KernelSet{gemm_q4_K_amxemu, gemm_q5_K_amxemu, gemm_q6_K8_amxemu, gemm_q8_0_amxemu, true, false, false},
      WeightLayout::kFast);
}

}  // namespace dllm::cpu
