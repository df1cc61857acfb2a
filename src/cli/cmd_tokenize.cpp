// `dllm tokenize`: prints the token ids `run` feeds the model for a prompt (chat template applied
// unless --no-chat), separated by spaces on one line. Loads only the tokenizer, not the weights.
// Without --model it uses the same default model as `run` (default_model.h).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/prompt.h"
#include "cli/run_options.h"
#include "cli/util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

Command add_tokenize_command(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub =
      root.add_subcommand("tokenize", "Print the token ids that run feeds the model for a prompt");
  add_model_flags(*sub, o->model);
  CLI::Option* prompt =
      sub->add_option("-p,--prompt", o->prompt, "The prompt (or give it as the first word)");
  CLI::Option* prompt_pos = sub->add_option("PROMPT", o->prompt, "The prompt, when --prompt is not given");
  prompt->excludes(prompt_pos);
  CLI::Option* system = sub->add_option("--system", o->system, "System message for the chat template");
  sub->add_flag("--no-chat", o->no_chat, "Tokenize the raw prompt, without the chat template");
  sub->add_flag("--no-special", o->no_special, "Treat control-token text in the prompt as plain text");
  return {sub, [o, prompt, prompt_pos, system]() {
            o->prompt_given = prompt->count() > 0 || prompt_pos->count() > 0;
            o->system_given = system->count() > 0;
            const tokenizer::ChatOptions chat = chat_options(*o);  // usage errors before any file I/O
            const std::string path = resolve_model_or_default(o->model.model, offline_requested(o->model));
            const gguf::GgufFile file = gguf::GgufFile::open(path);
            const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
            std::cout << join_ids(tokenizer::prompt_tokens(tok, chat)) << "\n";
            return 0;
          }};
}

}  // namespace dllm::cli
