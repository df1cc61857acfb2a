// make_matrix: picks the kernel for a weight type and ISA. Q4_K and Q6_K weights are repacked into the
// interleaved 16-row layout of cpu/qgemm.h and multiplied by the kernel of the chosen ISA (scalar,
// AVX2, AVX-VNNI, AVX-512 VNNI); every other type uses the portable reference matrices (matmul_ref.cpp).
#include "cpu/matmul.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "cpu/dispatch.h"
#include "cpu/qgemm.h"

namespace dllm::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvxVnni:
      return "avxvnni";
    case Isa::kAvx512Vnni:
      return "avx512vnni";
  }
  return "unknown";
}

namespace {

using Kernel = void (*)(const qgemm::GemmArgs&);

Kernel q4_K_kernel(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return qgemm::gemm_q4_K_avx2;
    case Isa::kAvxVnni:
      return qgemm::gemm_q4_K_avxvnni;
    case Isa::kAvx512Vnni:
      return qgemm::gemm_q4_K_avx512;
    case Isa::kScalar:
      break;
  }
  return qgemm::gemm_q4_K_scalar;
}

Kernel q6_K_kernel(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return qgemm::gemm_q6_K_avx2;
    case Isa::kAvxVnni:
      return qgemm::gemm_q6_K_avxvnni;
    case Isa::kAvx512Vnni:
      return qgemm::gemm_q6_K_avx512;
    case Isa::kScalar:
      break;
  }
  return qgemm::gemm_q6_K_scalar;
}

// A Q4_K or Q6_K matrix repacked into 16-row groups (Block = Q4KBlock or Q6KBlock). Owns its weights,
// so the GGUF mapping's pages can be released after construction.
template <typename Block>
class PackedMatrix final : public Matrix {
 public:
  PackedMatrix(int64_t n_out, int64_t n_in, qgemm::AlignedArray<Block> blocks, Kernel kernel, bool q4)
      : Matrix(n_out, n_in), blocks_(std::move(blocks)), kernel_(kernel), q4_(q4) {}

  bool wants_q8k() const override { return true; }
  bool wants_q8u() const override { return std::is_same_v<Block, qgemm::Q6K8Block>; }
  // Two 16-row groups: the SIMD kernels' widest tile (one activation broadcast feeds both).
  int64_t row_granularity() const override { return 2 * qgemm::kRows; }
  bool owns_data() const override { return true; }

  void multiply(const Activations& x, int64_t o_begin, int64_t o_end, float* y, int64_t ldy) const override {
    o_end = std::min(o_end, n_out_);
    if (o_begin >= o_end || x.n_tokens <= 0) return;
    qgemm::GemmArgs a;
    a.w = blocks_.get();
    a.n_sb = n_in_ / quant::kQK_K;
    a.g_begin = o_begin / qgemm::kRows;
    a.g_end = (o_end + qgemm::kRows - 1) / qgemm::kRows;
    a.n_groups = (n_out_ + qgemm::kRows - 1) / qgemm::kRows;
    a.x = x.q8k;
    a.n_tokens = x.n_tokens;
    a.y = y;
    a.ldy = ldy;
    a.o_begin = o_begin;
    a.o_end = o_end;
    if (q4_ && x.bs32 != nullptr) {
      a.bs32 = x.bs32;
    } else if (q4_) {
      // Sums of 32 activations for the Q4_K min term, per call (the forward pass makes them once per
      // input instead): a few adds per 32 inputs.
      thread_local std::vector<int16_t> bs32;
      bs32.resize(size_t(x.n_tokens * a.n_sb * 8));
      qgemm::make_bs32(x.q8k, x.n_tokens, a.n_sb, bs32.data());
      a.bs32 = bs32.data();
    }
    if constexpr (std::is_same_v<Block, qgemm::Q6K8Block>) {
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
    kernel_(a);
  }

 private:
  qgemm::AlignedArray<Block> blocks_;
  Kernel kernel_;
  bool q4_;
};

}  // namespace

std::unique_ptr<Matrix> make_matrix(const gguf::TensorInfo& tensor, const uint8_t* data, Isa isa) {
  const bool q4 = tensor.type == gguf::GgmlType::Q4_K;
  const bool q6 = tensor.type == gguf::GgmlType::Q6_K;
  if (!q4 && !q6) return make_matrix_ref(tensor, data);
  if (!isa_supported(isa)) {
    throw Error("tensor " + tensor.name + ": kernel path " + isa_name(isa) +
                " is not supported by this CPU; use --isa auto");
  }
  const int64_t n_in = tensor.ne[0];
  const int64_t n_out = tensor.ne[1] * tensor.ne[2] * tensor.ne[3];
  if (n_in <= 0 || n_in % quant::kQK_K != 0) {
    throw Error("tensor " + tensor.name + ": row length " + std::to_string(n_in) +
                " is not a multiple of 256, as " + (q4 ? "Q4_K" : "Q6_K") + " requires");
  }
  if (q4) {
    auto blocks = qgemm::pack_q4_K(reinterpret_cast<const quant::block_q4_K*>(data), n_out, n_in);
    return std::make_unique<PackedMatrix<qgemm::Q4KBlock>>(n_out, n_in, std::move(blocks), q4_K_kernel(isa),
                                                           true);
  }
  if (isa == Isa::kAvx512Vnni) {
    // The byte layout: 1.3x the bytes of Q6KBlock, but the kernel no longer spends most of its
    // instructions unpacking (docs/kernels.md).
    auto blocks = qgemm::pack_q6_K8(reinterpret_cast<const quant::block_q6_K*>(data), n_out, n_in);
    return std::make_unique<PackedMatrix<qgemm::Q6K8Block>>(n_out, n_in, std::move(blocks),
                                                            qgemm::gemm_q6_K8_avx512, false);
  }
  auto blocks = qgemm::pack_q6_K(reinterpret_cast<const quant::block_q6_K*>(data), n_out, n_in);
  return std::make_unique<PackedMatrix<qgemm::Q6KBlock>>(n_out, n_in, std::move(blocks), q6_K_kernel(isa),
                                                         false);
}

}  // namespace dllm::cpu
