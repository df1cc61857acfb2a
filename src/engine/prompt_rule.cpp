// apply_prompt_rule (prompt_rule.h).
#include "engine/prompt_rule.h"

#include "model/arch.h"

namespace dllm::engine {

std::string apply_prompt_rule(tokenizer::ChatOptions& chat, const model::Architecture* arch) {
  if (chat.no_chat || arch == nullptr || arch->raw_prompt_note == nullptr) return "";
  chat.no_chat = true;
  return arch->raw_prompt_note;
}

}  // namespace dllm::engine
