// The prompt flags (--prompt/positional, --prompt-file, --system, --no-chat, --no-special) turned into the
// token ids the model is fed: shared by `run` and `tokenize` so both always agree.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <vector>

#include "cli/run_options.h"
#include "gguf/gguf.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

/// ChatOptions from the flags. The prompt is --prompt's text, or the file --prompt-file names, or
/// standard input for --prompt - / --prompt-file - (a file's one trailing newline is dropped, as
/// llama.cpp's --file does). Throws dllm::UsageError when no prompt was given at all (an empty
/// --prompt "" is a prompt) or both --prompt and --prompt-file were, dllm::Error when the file cannot
/// be read or is larger than kMaxPromptBytes.
tokenizer::ChatOptions chat_options(const RunOptions& o);

/// The largest prompt file or standard input accepted: far above any model's context (131,072
/// tokens are well under 1 MiB of text), small enough that a wrong file (a model, a disk image)
/// stops at once instead of filling memory.
inline constexpr uint64_t kMaxPromptBytes = 64ull << 20;

/// The flag registrations shared by run and tokenize: -p/--prompt, PROMPT, --prompt-file, --system.
void add_prompt_flags(CLI::App& sub, RunOptions& o);
/// After parsing: records which of those flags were given into `o`.
void note_prompt_flags(CLI::App& sub, RunOptions& o);

/// The warning for a --system that changes nothing: with --no-chat, or on a model without a chat
/// template (the prompt is fed as raw text either way). Empty when --system is used or not given.
std::string ignored_system_warning(const tokenizer::Tokenizer& tok, const RunOptions& o);

/// tokenizer::prompt_tokens(tok, chat_options(o)).
std::vector<int32_t> prompt_ids(const tokenizer::Tokenizer& tok, const RunOptions& o);

}  // namespace dllm::cli
