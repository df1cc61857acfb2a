// Entry point of the `dllm` binary: parses the command line (CLI11), runs one command, and turns every
// error into one "ERROR: <message>" line on stderr with the exit code of base/error.h
// (1 failure, 2 usage). stdout carries only a command's result (text, ids, JSON, help).
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/util.h"

namespace dllm::cli {

const std::vector<std::string>& command_names() {
  static const std::vector<std::string> names = {"run", "tokenize", "inspect", "logits", "pull", "help"};
  return names;
}

namespace {

std::string command_list() {
  std::string s;
  for (const auto& n : command_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

[[noreturn]] void unknown_command(const std::string& word) {
  throw UsageError("unknown command '" + word + "': did you mean '" + closest(word, command_names()) +
                   "'? (commands: " + command_list() + "; see 'dllm --help')");
}

/// `dllm`, `dllm help`, `dllm --help`: the root usage followed by every command's usage.
void print_all_help(CLI::App& app, const std::vector<Command>& commands) {
  // Not app.help(): it delegates to the parsed subcommand (here `help` itself).
  std::cout << app.get_formatter()->make_help(&app, "dllm", CLI::AppFormatMode::Normal);
  for (const auto& c : commands) std::cout << "\n" << c.app->help("dllm");
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "dllm: local inference for diffusion language models (LLaDA, Dream) from GGUF files.\n"
      "Run 'dllm COMMAND --help' for the flags of one command.",
      "dllm"};
  app.require_subcommand(0, 1);
  app.fallthrough(false);

  std::vector<Command> commands = {add_run_command(app), add_tokenize_command(app), add_inspect_command(app),
                                   add_logits_command(app), add_pull_command(app)};
  CLI::App* help =
      app.add_subcommand("help", "Print the usage of every command, or of one: dllm help COMMAND");
  std::string help_topic;
  help->add_option("command", help_topic, "The command to describe");

  if (argc < 2) {
    print_all_help(app, commands);
    return kExitOk;
  }
  // An unknown first word is a misspelt command, not a stray argument: suggest the closest name.
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-') {
    bool known = false;
    for (const auto& n : command_names()) known = known || n == first;
    if (!known) unknown_command(first);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    const auto chosen = app.get_subcommands();
    if (chosen.empty() || chosen[0] == help) {
      print_all_help(app, commands);
    } else {
      std::cout << chosen[0]->help("dllm");
    }
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    print_all_help(app, commands);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const auto chosen = app.get_subcommands();
    const std::string where = chosen.empty() ? "dllm --help" : "dllm " + chosen[0]->get_name() + " --help";
    std::string message = e.what();
    // A stray word after the prompt is almost always an unquoted prompt of several words.
    if (dynamic_cast<const CLI::ExtrasError*>(&e) && message.find("expected: -") == std::string::npos) {
      message += "; quote a prompt of several words";
    }
    throw UsageError(message + " (see '" + where + "')");
  }

  if (help->parsed()) {
    if (help_topic.empty()) {
      print_all_help(app, commands);
      return kExitOk;
    }
    for (const auto& c : commands) {
      if (c.app->get_name() == help_topic) {
        std::cout << c.app->help("dllm");
        return kExitOk;
      }
    }
    unknown_command(help_topic);
  }
  for (const auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  print_all_help(app, commands);  // only flags, no command: e.g. `dllm --version`-less root
  return kExitOk;
}

void print_error(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "ERROR: %s\n", message.c_str());
}

}  // namespace
}  // namespace dllm::cli

int main(int argc, char** argv) {
  try {
    return dllm::cli::run_cli(argc, argv);
  } catch (const dllm::Error& e) {
    dllm::cli::print_error(e.what());
    return e.exit_code();
  } catch (const std::bad_alloc&) {
    dllm::cli::print_error("out of memory: the model and canvas do not fit; try a smaller --max-tokens");
    return dllm::kExitFailure;
  } catch (const std::exception& e) {
    dllm::cli::print_error(e.what());
    return dllm::kExitFailure;
  } catch (...) {
    dllm::cli::print_error("unexpected internal error (unknown exception)");
    return dllm::kExitFailure;
  }
}
