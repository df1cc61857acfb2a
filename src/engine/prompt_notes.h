// Notes on a tokenized prompt that `run` prints and `serve` returns (dllm.warnings): things that are
// legal but that a user would not guess from the text they typed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace dllm::engine {

/// "" unless the prompt holds the mask id (text such as <|mdm_mask|> typed into it, parsed as the
/// control token): such positions are part of the prompt, never denoised, and the model reads them
/// as unknown. The note says how many and that --no-special (request: no_special) keeps the text.
std::string typed_mask_note(const tokenizer::Tokenizer& tok, std::span<const int32_t> prompt, int32_t mask_id);

}  // namespace dllm::engine
