// What the GPU hands the sampler per logits row instead of the row itself (the sampler
// copies back a few numbers per row, not 126k logits). Plain C++17, shared by the host API
// (device.h) and the kernel (ops.cu).
#pragma once

#include <cstdint>

namespace dllm::cuda {

/// Statistics of one logits row over the allowed ids (src/diffusion/row_ops.h: "disallowed ids take
/// no part in argmax, noise, softmax or filtering"), the temperature-0 quantities of the samplers:
/// token = argmax (lowest id on ties, as llada_row / dream_row); with p = softmax over the allowed ids,
/// computed in f64: prob = p[token] (LLaDA low_confidence, Dream origin / maskgit_plus), margin =
/// top-1 p - top-2 p (Dream topk_margin; a tie for the top gives 0), neg_entropy = sum p log(p + 1e-10)
/// (Dream entropy). max_logit is the raw logit of token.
struct RowStats {
  int32_t token = -1;
  float max_logit = 0.0f;
  double prob = 0.0;
  double margin = 0.0;
  double neg_entropy = 0.0;
};

}  // namespace dllm::cuda
