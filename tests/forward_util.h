// Helpers for tests that run a forward pass (forward/pass.h): one whole sequence as one segment.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "forward/pass.h"

namespace dllm::test {

/// One segment over the whole sequence (positions 0 .. tokens.size() - 1, nothing kept, every key
/// seen): the UNSHIFTED logits of `rows` into out (rows.size() x n_vocab).
inline void forward_whole(forward::Forward& f, std::span<const int32_t> tokens, std::span<const int32_t> rows,
                          float* out) {
  forward::Segment s;
  s.tokens = tokens;
  s.logit_rows = rows;
  s.logits = out;
  f.forward({&s, 1});
}

/// forward_whole into a new vector.
inline std::vector<float> whole_logits(forward::Forward& f, std::span<const int32_t> tokens,
                                       std::span<const int32_t> rows) {
  std::vector<float> out(rows.size() * static_cast<size_t>(f.n_vocab()));
  forward_whole(f, tokens, rows, out.data());
  return out;
}

}  // namespace dllm::test
