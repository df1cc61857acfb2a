// Error type of the whole library: thrown at load/plan time, never from inside a kernel.
// Only src/cli catches it and prints it as one "ERROR: <message>" line on stderr.
#pragma once

#include <stdexcept>
#include <string>

namespace dllm {

/// Exit codes of the `dllm` binary (and the ./dllm launcher).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  ///< bad file, I/O, network, model error
  kExitUsage = 2,    ///< bad flag, bad flag value, invalid combination
};

/// A failure reported to the user. The message names the thing that is wrong and, where possible,
/// what to do; it has no "ERROR:" prefix and no trailing newline (the CLI adds those).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitFailure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// A usage error (bad flag value, impossible combination): exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, kExitUsage) {}
};

}  // namespace dllm
