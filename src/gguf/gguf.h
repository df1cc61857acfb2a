// Memory-mapped GGUF reader (versions 2 and 3): metadata key/values, tensor directory, tensor data.
// Format: ggml/docs/gguf.md in llama.cpp. Every offset and size is checked against the file size
// before use; a malformed file raises dllm::Error with one line naming the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/ggml_types.h"

namespace dllm::gguf {

/// gguf_type: metadata value types; serialized values.
enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
  kSentinel = 13,
};

/// "UINT32", "STRING", ...
const char* value_type_name(ValueType t);

/// One metadata value. Scalars live in the matching field; ARRAY holds its element type and the
/// elements (nested arrays allowed), each element itself a Value.
struct Value {
  ValueType type = ValueType::UINT8;
  uint64_t u = 0;                          ///< UINT8/16/32/64 and BOOL (0/1)
  int64_t i = 0;                           ///< INT8/16/32/64
  double f = 0;                            ///< FLOAT32/64
  std::string s;                           ///< STRING
  ValueType elem_type = ValueType::UINT8;  ///< ARRAY only
  std::vector<Value> items;                ///< ARRAY only
};

struct KeyValue {
  std::string key;
  Value value;
};

/// One tensor of the directory. ne[0] is the contiguous dimension (ggml order): a 2-D weight with
/// ne = [n_in, n_out] is n_out rows of n_in values each.
struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;   ///< bytes from the start of the tensor data section
  uint64_t n_bytes = 0;  ///< size of the data in bytes
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  /// Bytes of one row (ne[0] elements).
  uint64_t row_bytes() const;
};

/// An open, validated GGUF file. Move-only; the mapping lives as long as the object.
class GgufFile {
 public:
  /// Maps and validates `path`. Throws dllm::Error on: missing/unreadable file, wrong magic,
  /// unsupported version, truncated header, bad value type, oversized counts/strings, n_dims > 4,
  /// unknown ggml type, row size not a multiple of the block size, duplicate tensor names, bad
  /// alignment, tensor data past the end of the file.
  static GgufFile open(const std::string& path);
  /// Parses and validates `size` bytes at `data` as open() does a file, without copying them: the
  /// bytes must outlive the object. `name` stands for the path in messages and path(). For the
  /// fuzzers and tests (the bytes can be an exactly sized heap buffer, so AddressSanitizer sees any
  /// read past the end, which it cannot inside a file mapping). release_pages() does nothing here.
  static GgufFile from_memory(const uint8_t* data, size_t size, const std::string& name);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const;
  uint32_t version() const;
  uint64_t file_size() const;    ///< bytes
  uint64_t alignment() const;    ///< general.alignment or 32
  uint64_t data_offset() const;  ///< byte offset of the tensor data section in the file

  const std::vector<KeyValue>& metadata() const;
  /// nullptr when absent.
  const Value* find(std::string_view key) const;

  // Typed getters. The `get_*` ones throw dllm::Error "required metadata key missing: <key>" when
  // absent and a type error naming key, expected and actual type when the type is wrong. Integer
  // getters accept any integer type whose value fits. Float getters accept FLOAT32/FLOAT64.
  uint64_t get_u64(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  float get_f32(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<uint32_t> find_u32(std::string_view key) const;
  std::optional<float> find_f32(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string> find_string(std::string_view key) const;
  /// Array accessors; throw when absent or of another element type.
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<int32_t> get_i32_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const;
  /// nullptr when absent.
  const TensorInfo* find_tensor(std::string_view name) const;
  /// Pointer to the tensor's bytes inside the mapping (valid while this object lives).
  const uint8_t* tensor_data(const TensorInfo& t) const;
  /// Gives the tensor's mapped pages back to the kernel (madvise MADV_DONTNEED on the page-aligned
  /// range inside the tensor); a later read faults them in again from the file. For after repacking.
  void release_pages(const TensorInfo& t) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::gguf
