// The prompt flags (--prompt/positional, --system, --no-chat, --no-special) turned into the token ids
// the model is fed: shared by `run` and `tokenize` so both always agree.
#pragma once

#include <cstdint>
#include <vector>

#include "cli/run_options.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

/// ChatOptions from the flags. Throws dllm::UsageError when no prompt was given at all (an empty
/// --prompt "" is a prompt).
tokenizer::ChatOptions chat_options(const RunOptions& o);

/// tokenizer::prompt_tokens(tok, chat_options(o)).
std::vector<int32_t> prompt_ids(const tokenizer::Tokenizer& tok, const RunOptions& o);

}  // namespace dllm::cli
