// `dllm tokenize`: prints the token ids `run` feeds the model for a prompt (chat template applied
// unless --no-chat), separated by spaces on one line. Loads only the tokenizer, not the weights.
// Without --model it uses the same default model as `run` (default_model.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/prompt.h"
#include "cli/run_options.h"
#include "cli/util.h"
#include "engine/prompt_rule.h"
#include "gguf/gguf.h"
#include "model/arch.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

Command add_tokenize_command(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub =
      root.add_subcommand("tokenize", "Print the token ids that run feeds the model for a prompt");
  add_model_flags(*sub, o->model);
  add_prompt_flags(*sub, *o);
  sub->add_flag("--no-chat", o->no_chat, "Tokenize the raw prompt, without the chat template");
  sub->add_flag("--no-special", o->no_special, "Treat control-token text in the prompt as plain text");
  return {sub, [o, sub]() {
            note_prompt_flags(*sub, *o);
            tokenizer::ChatOptions chat = chat_options(*o);  // usage errors before any model I/O
            const std::string path = resolve_model_or_default(o->model.model, offline_requested(o->model));
            const gguf::GgufFile file = gguf::GgufFile::open(path);
            if (const std::string note = engine::apply_prompt_rule(chat, model::architecture_of(file));
                !note.empty())
              std::cerr << "note: " << note << "\n";
            const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
            const std::string system_note = ignored_system_warning(tok, *o);
            if (!system_note.empty()) std::fprintf(stderr, "warning: %s\n", system_note.c_str());
            std::cout << join_ids(tokenizer::prompt_tokens(tok, chat)) << "\n";
            return 0;
          }};
}

}  // namespace dllm::cli
