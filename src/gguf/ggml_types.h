// ggml tensor types as stored in GGUF files: ids, names and block geometry.
// Source: ggml/include/ggml.h (enum ggml_type) and ggml/src/ggml.c (type_traits) in llama.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dllm::gguf {

/// ggml_type values; the numbers are serialized in GGUF files and must never change.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  kSentinel = 40,
};

/// Block geometry of one ggml type: a row of n elements takes (n / block_size) * type_size bytes.
struct TypeTraits {
  const char* name;       ///< ggml's name, e.g. "Q4_K"
  int64_t block_size;     ///< elements per block (1 for F32/F16/BF16)
  size_t type_size;       ///< bytes per block
};

/// Traits of a ggml type id as read from a file; nullptr when the id is not a known ggml type.
const TypeTraits* type_traits(uint32_t type_id);

/// ggml's name of a type ("Q4_K"), or "type<id>" for an unknown id.
std::string type_name(uint32_t type_id);
inline std::string type_name(GgmlType t) { return type_name(static_cast<uint32_t>(t)); }

}  // namespace dllm::gguf
