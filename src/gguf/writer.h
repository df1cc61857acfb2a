// GGUF writer (versions 3 and 2): metadata of every value type, tensors from memory or streamed from
// a callback, data aligned to general.alignment. Used by tests (tiny synthetic models, malformed
// files built by corrupting a valid one) and by tools/make_synthetic_gguf (multi-GB files).
// Format: ggml/docs/gguf.md in llama.cpp; the reader is gguf/gguf.h.
//
// Example:
//   GgufWriter w;                                   // GGUF v3, alignment 32
//   w.add_string("general.architecture", "llada");
//   w.add_u32("llada.block_count", 2);
//   w.add_f32("llada.rope.freq_base", 500000.0f);
//   w.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
//   w.add_tensor("output_norm.weight", GgmlType::F32, {256}, ones.data(), 256 * sizeof(float));
//   w.write("/tmp/tiny.gguf");
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace dllm::gguf {

// Value builders (for add_value / nested arrays).
Value make_u8(uint8_t v);
Value make_i8(int8_t v);
Value make_u16(uint16_t v);
Value make_i16(int16_t v);
Value make_u32(uint32_t v);
Value make_i32(int32_t v);
Value make_u64(uint64_t v);
Value make_i64(int64_t v);
Value make_f32(float v);
Value make_f64(double v);
Value make_bool(bool v);
Value make_string(std::string v);
/// An ARRAY of `elem_type`; every item must have type elem_type (checked at add time). Nested:
/// make_array(ValueType::ARRAY, {make_array(ValueType::INT32, {...}), ...}).
Value make_array(ValueType elem_type, std::vector<Value> items);

/// Fills `n` bytes of a tensor's data, starting `offset` bytes into the tensor, into `dst`.
/// Called in order of increasing offset with chunks of at most a few MB, so a writer of a huge
/// tensor never holds it whole.
using TensorFill = std::function<void(uint8_t* dst, uint64_t offset, size_t n)>;

/// Builds a GGUF file in memory (metadata, tensor directory, small tensors) and writes it at once;
/// streamed tensors are generated chunk by chunk during write(). Keys and tensors are written in
/// the order added. Not thread-safe.
class GgufWriter {
 public:
  /// version: 3 (default) or 2 (same layout; v2 readers accept it). Throws dllm::Error otherwise.
  explicit GgufWriter(uint32_t version = 3);

  /// Data alignment in bytes (nonzero power of two; default 32). Also writes the key
  /// general.alignment (UINT32) when it is not 32. Throws dllm::Error on a bad value.
  void set_alignment(uint64_t alignment);
  uint64_t alignment() const { return alignment_; }

  // Metadata. Each throws dllm::Error when the key was already added (GGUF keys are unique).
  // Adding "general.alignment" by hand writes the key only; the data still uses alignment()
  // (so tests can write files whose key disagrees).
  void add_u8(const std::string& key, uint8_t v);
  void add_i8(const std::string& key, int8_t v);
  void add_u16(const std::string& key, uint16_t v);
  void add_i16(const std::string& key, int16_t v);
  void add_u32(const std::string& key, uint32_t v);
  void add_i32(const std::string& key, int32_t v);
  void add_u64(const std::string& key, uint64_t v);
  void add_i64(const std::string& key, int64_t v);
  void add_f32(const std::string& key, float v);
  void add_f64(const std::string& key, double v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  void add_u32_array(const std::string& key, const std::vector<uint32_t>& v);
  void add_f32_array(const std::string& key, const std::vector<float>& v);
  /// Any value, including nested arrays (see make_array). Throws when an array item's type
  /// differs from the array's element type.
  void add_value(const std::string& key, Value v);

  /// A tensor from memory (copied). ne is in ggml order (ne[0] = row length, contiguous), 1 to 4
  /// dims. Throws dllm::Error when the name repeats, ne is invalid, ne[0] is not a multiple of the
  /// type's block size, or n_bytes differs from the size the type and shape imply.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                  size_t n_bytes);
  /// A tensor whose bytes are produced by `fill` during write() (for multi-GB files). Same checks.
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, TensorFill fill);

  /// Bytes a tensor of this type and shape takes (ne[0] must be a multiple of the block size).
  static uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t>& ne);

  /// Writes the file (replacing it). Throws dllm::Error naming the path on an I/O failure.
  void write(const std::string& path) const;
  /// The whole file as bytes (for small test files that the test then corrupts).
  std::vector<uint8_t> to_bytes() const;

  /// Byte offset of the tensor data section in the written file (after the directory, aligned).
  uint64_t data_offset() const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes;
    std::vector<uint8_t> data;
    TensorFill fill;
  };
  void add_kv(const std::string& key, Value v);
  Tensor& new_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne);
  std::vector<uint8_t> header_bytes() const;
  template <typename Sink>
  void emit(Sink& sink) const;

  uint32_t version_;
  uint64_t alignment_ = 32;
  std::vector<KeyValue> kv_;
  std::vector<Tensor> tensors_;
};

}  // namespace dllm::gguf
