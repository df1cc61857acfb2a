// An architecture's prompt rule (model/arch.h Architecture::raw_prompt_note) applied to the chat
// options of a request, so that `run`, `tokenize` and `serve` (both routes) feed a model the same ids.
#pragma once

#include <string>

#include "tokenizer/chat.h"

namespace dllm::model {
struct Architecture;
}

namespace dllm::engine {

/// For a base model (RND1) the prompt, or a conversation's contents one after another, fed as raw
/// text whatever the file's chat template (chat.no_chat set). Returns the note that says so, or ""
/// when nothing changed (another architecture, arch null, or raw text asked for already).
std::string apply_prompt_rule(tokenizer::ChatOptions& chat, const model::Architecture* arch);

}  // namespace dllm::engine
