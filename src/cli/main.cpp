// Entry point of the `dllm` binary: parses the command line (CLI11), runs one command, and turns every
// error into one "ERROR: <message>" line on stderr with the exit code of base/error.h
// (1 failure, 2 usage). stdout carries only a command's result (text, ids, JSON, help). Before any of
// that, main() may re-execute the binary once to make idle OpenMP workers sleep
// (prefer_passive_openmp_wait).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/escape.h"
#include "base/temp_path.h"
#include "cli/commands.h"
#include "cli/util.h"
#include "cli/version.h"

namespace dllm::cli {

const std::vector<std::string>& command_names() {
  static const std::vector<std::string> names = {"run",  "tokenize", "inspect", "logits", "pull",
                                                 "help", "doctor",   "setup",   "serve"};
  return names;
}

const std::vector<std::string>& launcher_command_names() {
  static const std::vector<std::string> names = {"test"};
  return names;
}

namespace {

std::string command_list() {
  std::string s;
  for (const auto& n : command_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

[[noreturn]] void unknown_command(const std::string& word) {
  std::vector<std::string> candidates = command_names();
  for (const auto& n : launcher_command_names()) candidates.push_back(n);
  const std::string hint = closest(word, candidates);
  std::string launcher_only;
  for (const auto& n : launcher_command_names()) launcher_only += (launcher_only.empty() ? "" : ", ") + n;
  throw UsageError("unknown command '" + word + "'" + (hint.empty() ? "" : ": did you mean '" + hint + "'?") +
                   " (commands: " + command_list() + "; the ./dllm launcher adds " + launcher_only +
                   "; see 'dllm --help')");
}

/// `dllm test`: what only the launcher does (it builds the tests and runs them).
[[noreturn]] void launcher_command(const std::string& word) {
  throw UsageError("'" + word +
                   "' is a command of the ./dllm launcher, which builds the tests first: run ./dllm " + word +
                   " from the repository root");
}

/// `dllm`, `dllm help`, `dllm --help`: the root usage followed by every command's usage.
void print_all_help(CLI::App& app, const std::vector<Command>& commands) {
  // Not app.help(): it delegates to the parsed subcommand (here `help` itself).
  std::cout << app.get_formatter()->make_help(&app, "dllm", CLI::AppFormatMode::Normal);
  for (const auto& c : commands) std::cout << "\n" << c.app->help("dllm");
}

int run_cli(int argc, char** argv) {
  CLI::App app{
      "dllm: local inference for diffusion language models (LLaDA, Dream, LLaDA-MoE, RND1, LLaDA2.x,\n"
      "DiffusionGemma) from GGUF files.\n"
      "Run 'dllm COMMAND --help' for the flags of one command.",
      "dllm"};
  app.require_subcommand(0, 1);
  app.fallthrough(false);
  // A flag given twice takes its last value (`-n 8 -n 16` is 16), as llama.cpp's tools do; the
  // commands inherit this from the root.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

  app.set_version_flag(
      "--version", [] { return version_text(); },
      "Print the version, the commit, the CPU kernel path and whether CUDA is built, then exit");
  std::vector<Command> commands = {
      add_run_command(app),  add_tokenize_command(app), add_inspect_command(app), add_logits_command(app),
      add_pull_command(app), add_doctor_command(app),   add_setup_command(app),   add_serve_command(app)};
  CLI::App* help =
      app.add_subcommand("help", "Print the usage of every command, or of one: dllm help COMMAND");
  std::string help_topic;
  help->add_option("command", help_topic, "The command to describe");

  if (argc < 2) {
    // No command is a usage error (as git and ollama treat it): the root usage on stderr, exit 2, so
    // a script that forgot the command does not pass silently.
    std::cerr << app.get_formatter()->make_help(&app, "dllm", CLI::AppFormatMode::Normal);
    return kExitUsage;
  }
  // An unknown first word is a misspelt command, not a stray argument: suggest the closest name.
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-') {
    bool known = false;
    for (const auto& n : command_names()) known = known || n == first;
    for (const auto& n : launcher_command_names()) {
      if (n == first) launcher_command(first);
    }
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
  } catch (const CLI::CallForVersion& v) {
    std::cout << v.what();
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    const auto chosen = app.get_subcommands();
    const std::string where = chosen.empty() ? "dllm --help" : "dllm " + chosen[0]->get_name() + " --help";
    std::string message = e.what();
    // A stray word after the prompt is almost always an unquoted prompt of several words (for the
    // commands that take one: add_prompt_flags' PROMPT positional).
    const bool takes_prompt = !chosen.empty() && chosen[0]->get_option_no_throw("PROMPT") != nullptr;
    if (dynamic_cast<const CLI::ExtrasError*>(&e) && takes_prompt &&
        message.find("expected: -") == std::string::npos) {
      message += "; quote a prompt of several words";
    }
    // An option given last without its value: CLI11 says "--opt: 1 required INT:INT>=1 missing".
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && message.ends_with(" missing")) {
      const size_t colon = message.find(": ");
      if (colon != std::string::npos) message = message.substr(0, colon) + ": needs a value";
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
    for (const auto& n : launcher_command_names()) {
      if (n == help_topic) launcher_command(help_topic);
    }
    unknown_command(help_topic);
  }
  for (const auto& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  // Unreachable today (the root has no flags of its own besides --help); a usage error if it ever is.
  throw UsageError("no command given (commands: " + command_list() + "; see 'dllm --help')");
}

void print_error(const std::string& message) {
  std::fflush(stdout);
  // Messages quote names and values from files and servers: escaped, they stay one line and cannot
  // send control sequences to the terminal.
  std::fprintf(stderr, "ERROR: %s\n", escape_text(message).c_str());
}

}  // namespace

/// True when OMP_NUM_THREADS's value is what libgomp accepts: a comma-separated list of positive
/// whole numbers (spaces around them allowed).
bool omp_threads_value_ok(const char* v) {
  bool digit = false, any = false;
  for (; *v; ++v) {
    if (*v >= '0' && *v <= '9') {
      digit = any = true;
    } else if (*v == ',') {
      if (!digit) return false;
      digit = false;
    } else if (*v != ' ') {
      return false;
    }
  }
  return digit && any;
}

/// Runs before every shared library's constructor (ELF DT_PREINIT_ARRAY, which only an executable
/// has), so before libgomp reads OMP_NUM_THREADS and prints its own two-line complaint about a bad
/// value: such a value is renamed DLLM_IGNORED_OMP_NUM_THREADS in the environment, out of libgomp's
/// (and a re-executed child's) sight, and resolve_threads (common_flags.cpp) warns about it once in
/// our words. Gets envp from the loader; getenv may not work yet.
void hide_bad_omp_threads(int, char**, char** envp) {
  static char renamed[256];
  constexpr char kName[] = "OMP_NUM_THREADS=";
  for (char** e = envp; e && *e; ++e) {
    if (std::strncmp(*e, kName, sizeof kName - 1) != 0 || omp_threads_value_ok(*e + sizeof kName - 1))
      continue;
    std::snprintf(renamed, sizeof renamed, "DLLM_IGNORED_%s", *e);
    *e = renamed;
    return;
  }
}

__attribute__((used, section(".preinit_array"))) void (*const hide_bad_omp_threads_entry)(
    int, char**, char**) = &hide_bad_omp_threads;

/// Makes idle OpenMP workers sleep instead of spinning, unless the user chose: for `run`,
/// `logits` and `serve`, when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets OMP_WAIT_POLICY=passive
/// and re-executes this binary (/proc/self/exe) with the same argv. libgomp reads those variables once, in
/// its constructor before main(), so setting them here alone would be too late. The variable itself guards
/// against a loop (the new process sees it set). Why: with libgomp's default (spin about 300,000 rounds
/// before sleeping), workers that spin between the forward pass's parallel regions steal the cores other
/// threads need when the machine is busy (the tiny models' steps became many times slower and erratic);
/// see docs/architecture.md "Threads". Returns when exec fails.
void prefer_passive_openmp_wait(int argc, char** argv) {
  // Only the commands that run a forward pass use OpenMP; the others need not pay for a second
  // process start (tens of ms on a busy machine).
  if (argc < 2 || (std::strcmp(argv[1], "run") != 0 && std::strcmp(argv[1], "logits") != 0 &&
                   std::strcmp(argv[1], "serve") != 0)) {
    return;
  }
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (::setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // exec failed (no /proc, say): carry on with libgomp's default; children should not see the value.
  ::unsetenv("OMP_WAIT_POLICY");
}

}  // namespace dllm::cli

int main(int argc, char** argv) {
  dllm::cli::prefer_passive_openmp_wait(argc, argv);
  // Ctrl-C (or SIGTERM, SIGHUP) removes the temporary files of unfinished writes (--out, --trace) and
  // ends the process by that signal, as it would without a handler: exit status 130 for Ctrl-C.
  dllm::remove_temp_files_on_signals();
  try {
    const int rc = dllm::cli::run_cli(argc, argv);
    // The answer is the point of the run: a full disk or a closed file behind stdout must not end
    // in exit 0 with nothing written.
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0 || !std::cout) {
      const int err = errno;
      dllm::cli::print_error(std::string("cannot write to standard output (") +
                             (err != 0 ? std::strerror(err) : "write error") +
                             "): check where it is redirected");
      return dllm::kExitFailure;
    }
    return rc;
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
