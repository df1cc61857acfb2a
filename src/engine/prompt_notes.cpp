// See prompt_notes.h.
#include "engine/prompt_notes.h"

#include <algorithm>

namespace dllm::engine {

std::string typed_mask_note(const tokenizer::Tokenizer& tok, std::span<const int32_t> prompt, int32_t mask_id) {
  const auto n = std::count(prompt.begin(), prompt.end(), mask_id);
  if (n == 0) return "";
  return "the prompt holds the mask token " + tok.token_to_piece(mask_id) + " (id " + std::to_string(mask_id) +
         ") at " + std::to_string(n) + (n == 1 ? " position" : " positions") +
         ": it is part of the prompt and is not denoised; --no-special (a request's \"no_special\": true) "
         "keeps such text as text";
}

}  // namespace dllm::engine
