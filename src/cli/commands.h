// The subcommands of the `dllm` binary. Each add_*_command() declares its subcommand and flags on the
// root CLI11 app (before parsing) and returns the function main() calls when that subcommand was chosen.
// Commands throw dllm::Error / dllm::UsageError; only main.cpp prints "ERROR:" lines and picks exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace dllm::cli {

struct Command {
  CLI::App* app = nullptr;   ///< the subcommand, owned by the root app
  std::function<int()> run;  ///< returns the exit code (0 on success)
};

Command add_run_command(CLI::App& root);       // cmd_run.cpp
Command add_tokenize_command(CLI::App& root);  // cmd_tokenize.cpp
Command add_inspect_command(CLI::App& root);   // cmd_inspect.cpp
Command add_logits_command(CLI::App& root);    // cmd_logits.cpp
Command add_pull_command(CLI::App& root);      // cmd_pull.cpp
Command add_doctor_command(CLI::App& root);    // cmd_doctor.cpp
Command add_setup_command(CLI::App& root);     // cmd_setup.cpp
Command add_serve_command(CLI::App& root);     // cmd_serve.cpp

/// doctor's report on stdout, about `model` (a --model spec; "" = the default model). Returns the exit code.
int print_doctor_report(const std::string& model);  // cmd_doctor.cpp

/// Names of every command the binary accepts, for "did you mean" suggestions.
const std::vector<std::string>& command_names();

/// Commands of the ./dllm launcher that the binary does not have (it builds and runs the tests):
/// suggested for typos too, and named when given to the binary.
const std::vector<std::string>& launcher_command_names();

}  // namespace dllm::cli
