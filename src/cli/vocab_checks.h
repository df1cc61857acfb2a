// Checks of the tokenizer's special-id keys and {arch}.vocab_size that the tokenizer itself lets
// pass (as llama.cpp does, an id key outside the vocabulary is ignored): `run` reports them instead of
// running silently with an end token or a BOS missing, or calling an out-of-range mask id "missing".
#pragma once

#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

/// Throws dllm::Error when tokenizer.ggml.mask_token_id is present but outside [0, n_tokens) (the
/// tokenizer then has no mask id; a missing key is reported where the mask id is needed). Returns
/// one warning for each of tokenizer.ggml.{bos,eos,eot,eom}_token_id outside the vocabulary, and for
/// {arch}.vocab_size present and different from the token count (llama.cpp writes the token count
/// there, src/llama-model-saver.cpp).
std::vector<std::string> check_vocab_keys(const gguf::GgufFile& file, const tokenizer::Tokenizer& tok,
                                          const std::string& arch);

}  // namespace dllm::cli
