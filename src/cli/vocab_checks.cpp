// See vocab_checks.h.
#include "cli/vocab_checks.h"

#include <cstdint>
#include <optional>

#include "base/error.h"

namespace dllm::cli {

std::vector<std::string> check_vocab_keys(const gguf::GgufFile& file, const tokenizer::Tokenizer& tok,
                                          const std::string& arch) {
  const int64_t n_tokens = tok.n_tokens();
  const std::string vocab =
      "the vocabulary of " + std::to_string(n_tokens) + " tokens (tokenizer.ggml.tokens)";
  const auto out_of_range = [&](const char* key) -> std::optional<uint64_t> {
    const std::optional<uint64_t> v = file.find_u64(key);
    if (v && *v >= static_cast<uint64_t>(n_tokens)) return v;
    return std::nullopt;
  };
  if (const auto v = out_of_range("tokenizer.ggml.mask_token_id")) {
    throw Error("tokenizer.ggml.mask_token_id is " + std::to_string(*v) + ", outside " + vocab +
                ": the file's metadata is broken (a diffusion model's mask token must be one of its tokens)");
  }
  // The mask id must differ from every end token: an answer's end is found by its end token, and a
  // still-masked position would read as one (the answer could never be told from the masks).
  if (const std::optional<uint64_t> mask = file.find_u64("tokenizer.ggml.mask_token_id")) {
    for (const char* key :
         {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
      if (file.find_u64(key) == mask) {
        throw Error("tokenizer.ggml.mask_token_id and " + std::string(key) + " are both " +
                    std::to_string(*mask) +
                    ": the file's metadata is broken (a masked position would read as the answer's end)");
      }
    }
  }
  // A BOS id outside the vocabulary is ignored, as llama.cpp ignores it; but a file that also says
  // add_bos_token needs a BOS the prompt cannot have: that is one error, not a warning and then an error.
  if (const auto v = out_of_range("tokenizer.ggml.bos_token_id"); v && tok.add_bos()) {
    throw Error("tokenizer.ggml.bos_token_id is " + std::to_string(*v) + ", outside " + vocab +
                ", and tokenizer.ggml.add_bos_token is true: the prompt needs a BOS token this file does not "
                "have; the file's metadata is broken");
  }
  std::vector<std::string> warnings;
  const struct {
    const char* key;
    const char* effect;
  } ends[] = {
      {"tokenizer.ggml.bos_token_id", "no BOS token is added to the prompt (add_bos_token is false)"},
      {"tokenizer.ggml.eos_token_id", "the answer ends only at the other end tokens or at the canvas end"},
      {"tokenizer.ggml.eot_token_id", "the answer ends only at the other end tokens or at the canvas end"},
      {"tokenizer.ggml.eom_token_id", "the answer ends only at the other end tokens or at the canvas end"},
  };
  for (const auto& e : ends) {
    if (const auto v = out_of_range(e.key)) {
      warnings.push_back(std::string(e.key) + " is " + std::to_string(*v) + ", outside " + vocab +
                         ": ignored, so " + e.effect);
    }
  }
  const std::string size_key = arch + ".vocab_size";
  if (const std::optional<uint64_t> size = file.find_u64(size_key);
      size && *size != static_cast<uint64_t>(n_tokens)) {
    warnings.push_back(size_key + " is " + std::to_string(*size) + " but tokenizer.ggml.tokens has " +
                       std::to_string(n_tokens) + " entries: the token list is used");
  }
  return warnings;
}

}  // namespace dllm::cli
