// See prompt.h.
#include "cli/prompt.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "base/error.h"

namespace dllm::cli {

namespace {

/// All of `in`, at most kMaxPromptBytes; `what` names the source in errors.
std::string read_all(std::istream& in, const std::string& what) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxPromptBytes) {
      throw Error(what + " is larger than " + std::to_string(kMaxPromptBytes >> 20) +
                  " MiB, more text than any model's context holds: give a prompt file, not another file");
    }
  }
  if (in.bad()) throw Error("cannot read " + what + " (" + std::strerror(errno) + ")");
  return text;
}

/// The prompt text of `path` ("-": standard input), without one trailing newline ("\n" or "\r\n"):
/// what a text editor or `echo` leaves at the end is not part of the prompt (llama.cpp's --file
/// drops it too, common/arg.cpp).
std::string read_prompt(const std::string& path) {
  std::string text;
  if (path == "-") {
    text = read_all(std::cin, "the prompt on standard input");
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      throw Error("cannot read prompt file " + path + " (" + std::strerror(errno) +
                  "): check the path given to --prompt-file");
    }
    text = read_all(f, "prompt file " + path);
  }
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
    if (!text.empty() && text.back() == '\r') text.pop_back();
  }
  return text;
}

}  // namespace

tokenizer::ChatOptions chat_options(const RunOptions& o) {
  if (o.prompt_file_given && o.prompt_given) {
    throw UsageError("--prompt-file and a prompt (--prompt or the first word) were both given: use one");
  }
  if (!o.prompt_given && !o.prompt_file_given) {
    throw UsageError(
        "no prompt given: pass --prompt TEXT, the prompt as the first word (quote it), --prompt-file FILE, "
        "or "
        "--prompt - to read it from standard input");
  }
  tokenizer::ChatOptions c;
  if (o.prompt_file_given) {
    c.prompt = read_prompt(o.prompt_file);
  } else if (o.prompt == "-") {
    c.prompt = read_prompt("-");
  } else {
    c.prompt = o.prompt;
  }
  if (o.system_given) c.system = o.system;
  c.no_chat = o.no_chat;
  c.parse_special = !o.no_special;
  return c;
}

std::vector<int32_t> prompt_ids(const tokenizer::Tokenizer& tok, const RunOptions& o) {
  return tokenizer::prompt_tokens(tok, chat_options(o));
}

void add_prompt_flags(CLI::App& sub, RunOptions& o) {
  CLI::Option* prompt = sub.add_option(
      "-p,--prompt", o.prompt, "The prompt (or give it as the first word); - reads it from standard input");
  CLI::Option* prompt_pos = sub.add_option("PROMPT", o.prompt, "The prompt, when --prompt is not given");
  CLI::Option* prompt_file =
      sub.add_option(
             "--prompt-file", o.prompt_file,
             "Read the prompt from FILE (- for standard input), for prompts too long for the command line")
          ->type_name("FILE");
  prompt->excludes(prompt_pos);
  prompt_file->excludes(prompt)->excludes(prompt_pos);
  sub.add_option("--system", o.system, "System message for the chat template");
}

void note_prompt_flags(CLI::App& sub, RunOptions& o) {
  o.prompt_given = sub.get_option("--prompt")->count() > 0 || sub.get_option("PROMPT")->count() > 0;
  o.prompt_file_given = sub.get_option("--prompt-file")->count() > 0;
  o.system_given = sub.get_option("--system")->count() > 0;
}

std::string ignored_system_warning(const tokenizer::Tokenizer& tok, const RunOptions& o) {
  if (!o.system_given) return "";
  if (o.no_chat)
    return "--system is ignored with --no-chat: the prompt is fed as raw text, without a chat template";
  if (tokenizer::detect_chat_template(tok.chat_template()) == tokenizer::ChatTemplateKind::kNone) {
    return "--system is ignored: this model has no chat template (tokenizer.chat_template), so the prompt is "
           "fed as raw text; write the system text into the prompt instead";
  }
  return "";
}

}  // namespace dllm::cli
