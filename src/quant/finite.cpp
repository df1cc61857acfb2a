// See finite.h.
#include "quant/finite.h"

#include <cstring>

#include "quant/blocks.h"

namespace dllm::quant {

namespace {

/// An IEEE half with all exponent bits set is Inf (mantissa 0) or NaN.
bool f16_non_finite(uint16_t h) {
  return (h & 0x7C00u) == 0x7C00u;
}

/// The first block whose f16 fields at the given offsets are not finite.
template <typename Block>
std::optional<int64_t> first_bad_block(const void* data, int64_t n_blocks,
                                       std::initializer_list<size_t> offsets) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (int64_t b = 0; b < n_blocks; ++b, p += sizeof(Block)) {
    for (size_t off : offsets) {
      uint16_t h;
      std::memcpy(&h, p + off, sizeof h);
      if (f16_non_finite(h)) return b;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> first_non_finite(gguf::GgmlType type, const void* data, int64_t n) {
  using gguf::GgmlType;
  const auto* bytes = static_cast<const uint8_t*>(data);
  switch (type) {
    case GgmlType::F32:
      for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, bytes + 4 * i, sizeof u);
        if ((u & 0x7F800000u) == 0x7F800000u) return i;
      }
      return std::nullopt;
    case GgmlType::F16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, sizeof h);
        if (f16_non_finite(h)) return i;
      }
      return std::nullopt;
    case GgmlType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, sizeof h);
        if ((h & 0x7F80u) == 0x7F80u) return i;
      }
      return std::nullopt;
    case GgmlType::Q8_0:
      return first_bad_block<block_q8_0>(data, n / kQK8_0, {offsetof(block_q8_0, d)});
    case GgmlType::Q4_K:
      return first_bad_block<block_q4_K>(data, n / kQK_K,
                                         {offsetof(block_q4_K, d), offsetof(block_q4_K, dmin)});
    case GgmlType::Q5_K:
      return first_bad_block<block_q5_K>(data, n / kQK_K,
                                         {offsetof(block_q5_K, d), offsetof(block_q5_K, dmin)});
    case GgmlType::Q6_K:
      return first_bad_block<block_q6_K>(data, n / kQK_K, {offsetof(block_q6_K, d)});
    default:
      return std::nullopt;
  }
}

}  // namespace dllm::quant
