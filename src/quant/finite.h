// Finding NaN and Inf in stored weights without decoding them: the values of F32, F16 and BF16
// tensors, and the f16 scales of the quantized blocks (Q8_0 d; Q4_K and Q5_K d and dmin; Q6_K d).
// A quantized block's integer parts are finite by construction, so a block decodes to a non-finite
// value only through a non-finite scale (a finite scale times a 6-bit code cannot overflow f32).
// The same check as llama.cpp's --check-tensors (ggml_validate_row_data), for the types we read.
#pragma once

#include <cstdint>
#include <optional>

#include "gguf/ggml_types.h"

namespace dllm::quant {

/// The index of the first element (F32/F16/BF16) or block (quantized) of `n_elements` values of
/// `type` at `data` that is NaN or infinite, or nullopt when all are finite or the type has no float
/// parts we read (other types are not checked). `n_elements` is a multiple of the type's block size.
std::optional<int64_t> first_non_finite(gguf::GgmlType type, const void* data, int64_t n_elements);

}  // namespace dllm::quant
