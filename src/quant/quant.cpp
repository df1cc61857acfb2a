// Type dispatch of the scalar reference decoders (dequantize_row, can_dequantize).
#include <cstring>
#include <string>

#include "base/error.h"
#include "quant/quant.h"

namespace dllm::quant {

namespace {

using gguf::GgmlType;

/// Elements per block of the types dequantize_row supports; 0 for the others.
int64_t block_elems(GgmlType type) {
  switch (type) {
    case GgmlType::F32:
    case GgmlType::F16:
    case GgmlType::BF16:
      return 1;
    case GgmlType::Q8_0:
    case GgmlType::Q5_0:
      return kQK8_0;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return kQK_K;
    default:
      return 0;
  }
}

}  // namespace

bool can_dequantize(GgmlType type) {
  return block_elems(type) != 0;
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const int64_t qk = block_elems(type);
  if (qk == 0) {
    throw Error("cannot dequantize " + gguf::type_name(type) +
                " data (supported: F32, F16, BF16, Q8_0, Q5_0, Q4_K, Q5_K, Q6_K)");
  }
  if (n < 0 || n % qk != 0) {
    throw Error("cannot dequantize " + std::to_string(n) + " values of " + gguf::type_name(type) +
                ": not a multiple of its block size " + std::to_string(qk));
  }
  switch (type) {
    case GgmlType::F32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case GgmlType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      break;
    }
    case GgmlType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      break;
    }
    case GgmlType::Q8_0:
      dequantize_row_q8_0(static_cast<const block_q8_0*>(src), dst, n);
      break;
    case GgmlType::Q5_0:
      dequantize_row_q5_0(static_cast<const block_q5_0*>(src), dst, n);
      break;
    case GgmlType::Q4_K:
      dequantize_row_q4_K(static_cast<const block_q4_K*>(src), dst, n);
      break;
    case GgmlType::Q5_K:
      dequantize_row_q5_K(static_cast<const block_q5_K*>(src), dst, n);
      break;
    case GgmlType::Q6_K:
      dequantize_row_q6_K(static_cast<const block_q6_K*>(src), dst, n);
      break;
    default:
      break;  // unreachable: block_elems() returned 0 above
  }
}

}  // namespace dllm::quant
