// The portable reference matrices: Q4_K / Q5_K / Q6_K weights against Q8_K activations and Q8_0
// weights against Q8_0 activations through quant's scalar vec_dot (the integer arithmetic of ggml's
// *_generic dots, so they see what llama.cpp's CPU backend sees), and F32 / F16 / BF16 weights against
// f32 activations. These are the oracle the
// packed kernels are tested against; they are not fast, but each weight row is read once per call
// and reused for every token while it is in L1.
#include <string>
#include <vector>

#include "base/error.h"
#include "cpu/matmul.h"
#include "cpu/ops.h"
#include "quant/quant.h"

namespace dllm::cpu {

const char* const kMatrixKernelTypes = "Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, F32, F16, BF16";

namespace {

using gguf::GgmlType;

/// Q4_K, Q5_K or Q6_K rows, read in place from the mapping.
template <typename Block, float (*VecDot)(const Block*, const quant::block_q8_K*, int64_t)>
class KQuantMatrix final : public Matrix {
 public:
  KQuantMatrix(const gguf::TensorInfo& t, const uint8_t* data)
      : Matrix(t.ne[1], t.ne[0]), data_(data), row_bytes_(t.row_bytes()) {}
  bool wants_q8k() const override { return true; }
  uint64_t weight_bytes() const override { return static_cast<uint64_t>(n_out_) * row_bytes_; }
  void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                     int64_t ldy) const override {
    const int64_t nb = n_in_ / quant::kQK_K;
    for (int64_t o = o_begin; o < o_end; ++o) {
      const Block* w = reinterpret_cast<const Block*>(data_ + static_cast<uint64_t>(o) * row_bytes_);
      for (int64_t t = 0; t < x.n_tokens; ++t) y[t * ldy + o] = VecDot(w, x.q8k + t * nb, n_in_);
    }
  }

 private:
  const uint8_t* data_;
  uint64_t row_bytes_;
};

/// Q8_0 rows, read in place from the mapping, against the Q8_0 activations (made per call from f32
/// when the caller did not pass them).
class Q80Matrix final : public Matrix {
 public:
  Q80Matrix(const gguf::TensorInfo& t, const uint8_t* data)
      : Matrix(t.ne[1], t.ne[0]), data_(data), row_bytes_(t.row_bytes()) {}
  bool wants_q8k() const override { return false; }
  bool wants_q8_0() const override { return true; }
  uint64_t weight_bytes() const override { return static_cast<uint64_t>(n_out_) * row_bytes_; }
  void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                     int64_t ldy) const override {
    const int64_t nb = n_in_ / quant::kQK8_0;
    const quant::block_q8_0* xq = x.q8_0;
    std::vector<quant::block_q8_0> own;
    if (xq == nullptr) {
      own.resize(static_cast<size_t>(x.n_tokens * nb));
      for (int64_t t = 0; t < x.n_tokens; ++t)
        quant::quantize_row_q8_0(x.f32 + t * n_in_, own.data() + t * nb, n_in_);
      xq = own.data();
    }
    for (int64_t o = o_begin; o < o_end; ++o) {
      const auto* w =
          reinterpret_cast<const quant::block_q8_0*>(data_ + static_cast<uint64_t>(o) * row_bytes_);
      for (int64_t t = 0; t < x.n_tokens; ++t)
        y[t * ldy + o] = quant::vec_dot_q8_0_q8_0(w, xq + t * nb, n_in_);
    }
  }

 private:
  const uint8_t* data_;
  uint64_t row_bytes_;
};

/// Q5_0 rows converted once to Q8_0 blocks (exact: quant::q5_0_to_q8_0) and multiplied as Q8_0,
/// which is ggml's vec_dot_q5_0_q8_0 (Q8_0 activations, int sums per block times d_x * d_y).
class Q50Matrix final : public Matrix {
 public:
  Q50Matrix(const gguf::TensorInfo& t, const uint8_t* data) : Matrix(t.ne[1], t.ne[0]) {
    const int64_t nb = n_in_ / quant::kQK8_0;
    blocks_.resize(static_cast<size_t>(n_out_ * nb));
    for (int64_t o = 0; o < n_out_; ++o)
      quant::q5_0_to_q8_0(
          reinterpret_cast<const quant::block_q5_0*>(data + static_cast<uint64_t>(o) * t.row_bytes()),
          blocks_.data() + o * nb, n_in_);
    gguf::TensorInfo q8 = t;
    q8.type = GgmlType::Q8_0;
    inner_ = std::make_unique<Q80Matrix>(q8, reinterpret_cast<const uint8_t*>(blocks_.data()));
  }
  bool wants_q8k() const override { return false; }
  bool wants_q8_0() const override { return true; }
  bool owns_data() const override { return true; }
  uint64_t weight_bytes() const override { return inner_->weight_bytes(); }
  void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                     int64_t ldy) const override {
    inner_->multiply_rows(x, o_begin, o_end, y, ldy);
  }

 private:
  std::vector<quant::block_q8_0> blocks_;
  std::unique_ptr<Q80Matrix> inner_;
};

/// F32 rows in place, or F16 / BF16 rows widened once to an owned f32 copy (these types are for
/// small precision-check models; the copy doubles their memory).
class F32Matrix final : public Matrix {
 public:
  F32Matrix(const gguf::TensorInfo& t, const uint8_t* data) : Matrix(t.ne[1], t.ne[0]) {
    if (t.type == GgmlType::F32) {
      w_ = reinterpret_cast<const float*>(data);
    } else {
      owned_.resize(static_cast<size_t>(n_out_ * n_in_));
      for (int64_t o = 0; o < n_out_; ++o) {
        quant::dequantize_row(t.type, data + static_cast<uint64_t>(o) * t.row_bytes(),
                              owned_.data() + o * n_in_, n_in_);
      }
      w_ = owned_.data();
    }
  }
  bool wants_q8k() const override { return false; }
  bool owns_data() const override { return !owned_.empty(); }
  uint64_t weight_bytes() const override { return static_cast<uint64_t>(n_out_ * n_in_) * sizeof(float); }
  void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                     int64_t ldy) const override {
    for (int64_t o = o_begin; o < o_end; ++o) {
      const float* w = w_ + o * n_in_;
      for (int64_t t = 0; t < x.n_tokens; ++t) y[t * ldy + o] = dot_f32(w, x.f32 + t * n_in_, n_in_);
    }
  }

 private:
  const float* w_ = nullptr;
  std::vector<float> owned_;
};

}  // namespace

std::unique_ptr<Matrix> make_matrix_ref(const gguf::TensorInfo& tensor, const uint8_t* data) {
  switch (tensor.type) {
    case GgmlType::Q4_K:
      return std::make_unique<KQuantMatrix<quant::block_q4_K, quant::vec_dot_q4_K_q8_K>>(tensor, data);
    case GgmlType::Q5_K:
      return std::make_unique<KQuantMatrix<quant::block_q5_K, quant::vec_dot_q5_K_q8_K>>(tensor, data);
    case GgmlType::Q6_K:
      return std::make_unique<KQuantMatrix<quant::block_q6_K, quant::vec_dot_q6_K_q8_K>>(tensor, data);
    case GgmlType::Q8_0:
      return std::make_unique<Q80Matrix>(tensor, data);
    case GgmlType::Q5_0:
      if (tensor.ne[0] % quant::kQK8_0 != 0)
        throw Error("tensor " + tensor.name + ": row length " + std::to_string(tensor.ne[0]) +
                    " is not a multiple of 32, as Q5_0 requires");
      return std::make_unique<Q50Matrix>(tensor, data);
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
      return std::make_unique<F32Matrix>(tensor, data);
    default:
      throw Error("tensor " + tensor.name + " is " + gguf::type_name(tensor.type) +
                  ": matrix kernels exist for " + kMatrixKernelTypes);
  }
}

}  // namespace dllm::cpu
