// See prompt.h.
#include "cli/prompt.h"

#include "base/error.h"

namespace dllm::cli {

tokenizer::ChatOptions chat_options(const RunOptions& o) {
  if (!o.prompt_given) {
    throw UsageError("no prompt given: pass --prompt TEXT or the prompt as the first word (quote it)");
  }
  tokenizer::ChatOptions c;
  c.prompt = o.prompt;
  if (o.system_given) c.system = o.system;
  c.no_chat = o.no_chat;
  c.parse_special = !o.no_special;
  return c;
}

std::vector<int32_t> prompt_ids(const tokenizer::Tokenizer& tok, const RunOptions& o) {
  return tokenizer::prompt_tokens(tok, chat_options(o));
}

}  // namespace dllm::cli
