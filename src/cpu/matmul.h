// Weight matrices prepared once at load time, and the one call the forward pass makes on them.
// The forward pass owns threading: it splits the output rows [0, n_out) into ranges and calls
// Matrix::multiply on each range from its worker threads; a Matrix never starts threads itself.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/isa.h"
#include "gguf/gguf.h"
#include "quant/blocks.h"

namespace dllm::cpu {

/// One projection input: n_tokens rows x n_in columns (n_in contiguous), in f32 and, for quantized
/// weights, also as Q8_K blocks (n_tokens rows x n_in/256 blocks, row-major). Quantized once per
/// projection input and shared by Q/K/V and by gate/up.
struct Activations {
  const float* f32 = nullptr;              ///< n_tokens x n_in, row stride n_in
  const quant::block_q8_K* q8k = nullptr;  ///< n_tokens x (n_in / 256), or nullptr when no matrix needs it
  int64_t n_tokens = 0;
  int64_t n_in = 0;
  /// Optional: the sums of 32 activations the Q4_K kernels need (n_tokens x n_in/256 x 8 int16, as
  /// qgemm::make_bs32 lays them out), made once per projection input; nullptr: every multiply()
  /// call makes its own.
  const int16_t* bs32 = nullptr;
  /// Optional: the Q8_K values + 128 as unsigned bytes (n_tokens x n_in; qgemm::make_u8), which the
  /// AVX-512 Q6_K kernel multiplies; nullptr: every multiply() call of such a matrix makes its own.
  const uint8_t* q8u = nullptr;
  /// Optional: the rows rounded to Q8_0 (n_tokens x n_in/32 blocks, row-major;
  /// quant::quantize_row_q8_0, so quants in -127..127, which the AVX2 kernel relies on), which Q8_0
  /// matrices multiply (ggml-cpu's activation format for Q8_0 weights); nullptr: every multiply()
  /// call of such a matrix quantizes f32 itself.
  const quant::block_q8_0* q8_0 = nullptr;
  /// Optional, read only with q8_0: its values + 128 as unsigned bytes (n_tokens x n_in;
  /// qgemm::make_u8_q8_0) for the VNNI Q8_0 kernels; nullptr: such a matrix makes them per call.
  const uint8_t* q8_0u = nullptr;
};

/// A weight of n_out rows x n_in columns (GGUF ne = [n_in, n_out]).
class Matrix {
 public:
  virtual ~Matrix() = default;
  int64_t n_out() const { return n_out_; }
  int64_t n_in() const { return n_in_; }
  /// True when multiply() reads Activations::q8k (Q4_K, Q5_K, Q6_K), false when it reads f32 or q8_0.
  virtual bool wants_q8k() const = 0;
  /// True when multiply() reads Activations::q8u if present (else it makes those bytes per call).
  virtual bool wants_q8u() const { return false; }
  /// True when multiply() reads Activations::q8_0 (Q8_0 weights) if present (else it quantizes f32
  /// per call).
  virtual bool wants_q8_0() const { return false; }
  /// True when multiply() also reads Activations::q8_0u if present (else it makes those bytes per call).
  virtual bool wants_q8_0u() const { return false; }
  /// y[t * ldy + o] = sum_k W[o][k] * x[t][k] for every token t < x.n_tokens and o in [o_begin, o_end).
  /// Thread-safe for disjoint output ranges. y is f32, row stride ldy (>= n_out). Counts its weight
  /// bytes and multiply-adds when traffic counting is on (cpu/traffic.h).
  void multiply(const Activations& x, int64_t o_begin, int64_t o_end, float* y, int64_t ldy) const;
  /// The bytes a multiply over all n_out rows reads from the weights (as stored: packed, or the GGUF's).
  virtual uint64_t weight_bytes() const = 0;
  /// multiply() without the counting: what each weight format implements.
  virtual void multiply_rows(const Activations& x, int64_t o_begin, int64_t o_end, float* y,
                             int64_t ldy) const = 0;
  /// Output rows per work item that suit this kernel's tiling (the forward pass splits by multiples).
  virtual int64_t row_granularity() const { return 16; }
  /// True when the matrix holds its own copy of the weights (repacked), so the mapping's pages can go.
  virtual bool owns_data() const { return false; }
  /// Writes values j0 <= j < j1 of row o decoded to f32 (dst[j - j0]), bit-identical to the GGUF block
  /// decoder (quant::dequantize_row), and returns true, where the stored layout allows it (Q6K8Block);
  /// returns false otherwise. Needs 0 <= j0 <= j1 <= n_in. DiffusionGemma's embedding lookup and
  /// self-conditioning read the tied token_embd this way, so the mapping's pages stay released.
  virtual bool decode_row(int64_t o, int64_t j0, int64_t j1, float* dst) const {
    (void)o, (void)j0, (void)j1, (void)dst;
    return false;
  }
  /// The whole row o (n_in values): decode_row(o, 0, n_in, dst).
  bool decode_row(int64_t o, float* dst) const { return decode_row(o, 0, n_in_, dst); }

 protected:
  Matrix(int64_t n_out, int64_t n_in) : n_out_(n_out), n_in_(n_in) {}
  int64_t n_out_;
  int64_t n_in_;
};

/// How Q6_K weights are packed where the kernel path offers a choice (docs/kernels.md). kFast: the
/// layout its fastest kernel reads (Q6K8Block on the AVX2, AVX-512 and AMX paths: 8.75 bits/weight).
/// kCompact: Q6KBlock (6.625 bits/weight) where a VNNI kernel reads it (the AVX-VNNI, AVX-512 and AMX
/// paths), else as kFast. For matrices a step multiplies by a row or two (a block-diffusion step's
/// experts), whose time is the bytes read, and whose bytes are most of the file.
enum class WeightLayout { kFast, kCompact };

/// Prepares `tensor` (bytes at `data`) for `isa`. Types with matrix kernels: Q4_K, Q5_K, Q6_K, Q8_0,
/// Q5_0 (repacked, the kernels of cpu/kernels/qgemm.h and cpu/kernels/qgemm_bytes.h; Q5_0 as Q50Block,
/// 6 bits per weight; make_matrix_amx_emulated converts it to Q8_0 exactly and packs Q80Block),
/// F32, F16, BF16; throws dllm::Error "tensor <name> is <type>: matrix kernels
/// exist for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, F32, F16, BF16" for any other type, and "tensor <name>: row length
/// <n> is not a multiple of <256 or 32>, as <type> requires" when a row is not whole blocks. A matrix either
/// keeps pointing into `data` (the mapping must outlive it) or copies/repacks it, in which case owns_data()
/// is true and the caller may release the mapped pages.
std::unique_ptr<Matrix> make_matrix(const gguf::TensorInfo& tensor, const uint8_t* data, Isa isa,
                                    WeightLayout layout = WeightLayout::kFast);

/// Tests only: make_matrix(tensor, data, Isa::kAvxVnni) for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0 with the AVX-VNNI
/// kernels' vpdpbusd / vpdpwssd replaced by exact AVX2 sequences (cpu/kernels/ymm_dot.h), so their
/// logic runs on a CPU with AVX2 only. Other types as make_matrix. Throws dllm::Error when this CPU
/// lacks AVX2.
std::unique_ptr<Matrix> make_matrix_vnni_emulated(const gguf::TensorInfo& tensor, const uint8_t* data);

/// Tests only: make_matrix(tensor, data, Isa::kAmx) for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0 with the tile
/// instructions emulated in scalar code (cpu/kernels/tile_unit.h TileEmu), so the AMX kernels' packing,
/// indexing and arithmetic run on any x86-64 CPU. Other types as make_matrix. Slow.
std::unique_ptr<Matrix> make_matrix_amx_emulated(const gguf::TensorInfo& tensor, const uint8_t* data);

/// The portable reference matrices (src/cpu/matmul_ref.cpp): Q4_K / Q5_K / Q6_K through quant's
/// scalar vec_dot over Q8_K activations, Q8_0 through vec_dot_q8_0_q8_0 over Q8_0 activations,
/// F32 / F16 / BF16 through an f32 dot product.
std::unique_ptr<Matrix> make_matrix_ref(const gguf::TensorInfo& tensor, const uint8_t* data);

/// The list kept in the error message above, so it stays true.
extern const char* const kMatrixKernelTypes;

}  // namespace dllm::cpu
