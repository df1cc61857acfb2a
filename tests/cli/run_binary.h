// Runs the built `dllm` binary (DLLM_BINARY) with arguments, without a shell, and captures its exit
// code, stdout and stderr separately: the CLI tests check all three.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <signal.h>

#include <string>
#include <vector>

#include "test_util.h"

extern char** environ;

namespace dllm::test {

struct RunResult {
  int exit_code = -1;  ///< the process's exit status; 128 + signal when killed by a signal
  std::string out;     ///< stdout
  std::string err;     ///< stderr
};

/// A started `program` with `args` (argv[1..]); stdin is the file `stdin_from`, /dev/null when empty. Extra
/// environment entries ("K=V") are added to the current environment, replacing a variable of the same name
/// there (a later entry wins); an entry without '=' ("NAME") removes NAME. stdout goes to the descriptor
/// `stdout_fd` when it is >= 0 (a pipe the test reads), else to the file `stdout_to` when given, else to a
/// file wait() returns; stderr to a file wait() returns, or with `merge_stderr` where stdout goes
/// (RunResult::err stays empty), so the order of the two streams' writes is kept.
class Process {
 public:
  Process(const std::string& program, const std::vector<std::string>& args,
          const std::vector<std::string>& extra_env = {}, const std::string& stdout_to = "",
          int stdout_fd = -1, bool merge_stderr = false, const std::string& stdin_from = "")
      : capture_out_(stdout_to.empty() && stdout_fd < 0),
        merge_stderr_(merge_stderr),
        out_path_(stdout_to.empty() ? (dir_ / "stdout").string() : stdout_to),
        err_path_((dir_ / "stderr").string()) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string in_path = stdin_from.empty() ? "/dev/null" : stdin_from;
    posix_spawn_file_actions_addopen(&actions, 0, in_path.c_str(), O_RDONLY, 0);
    if (stdout_fd >= 0) {
      posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    } else {
      posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    if (merge_stderr) {
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
    } else {
      posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    }
    std::vector<std::string> argv_s = {program};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    for (const std::string& x : extra_env) {
      const std::string key = x.substr(0, x.find('='));
      std::erase_if(env_s, [&](const std::string& e) { return e.substr(0, e.find('=')) == key; });
      if (x.find('=') != std::string::npos) env_s.push_back(x);
    }
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    if (pid_ < 0) spawn_error_ = "posix_spawn failed for " + program;
  }
  ~Process() {
    if (pid_ > 0 && !ended_) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  /// The child's process id (-1 when it could not be started).
  pid_t pid() const { return pid_; }

  /// True while the child has not ended (waitpid WNOHANG; the status is kept for wait()).
  bool running() {
    if (pid_ < 0 || ended_) return false;
    ended_ = waitpid(pid_, &status_, WNOHANG) == pid_;
    return !ended_;
  }

  /// Waits for the child to end and returns its exit status and captured output.
  RunResult wait() {
    RunResult r;
    if (pid_ < 0) {
      r.err = spawn_error_;
      return r;
    }
    int status = status_;
    if (!ended_) waitpid(pid_, &status, 0);
    pid_ = -1;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const auto out = capture_out_ ? read_file(out_path_) : std::vector<char>{};
    const auto err = merge_stderr_ ? std::vector<char>{} : read_file(err_path_);
    r.out.assign(out.begin(), out.end());
    r.err.assign(err.begin(), err.end());
    return r;
  }

 private:
  TempDir dir_;
  bool capture_out_;
  bool merge_stderr_;
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool ended_ = false;  ///< reaped by running()
  int status_ = 0;      ///< its status then
  std::string spawn_error_;
};

/// Runs `program` to its end (see Process); RunResult::out stays empty when stdout went to `stdout_to`.
inline RunResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env = {},
                             const std::string& stdout_to = "", bool merge_stderr = false,
                             const std::string& stdin_from = "") {
  return Process(program, args, extra_env, stdout_to, -1, merge_stderr, stdin_from).wait();
}

/// Runs build/bin/dllm.
inline RunResult run_dllm(const std::vector<std::string>& args,
                          const std::vector<std::string>& extra_env = {}, const std::string& stdout_to = "") {
  return run_program(DLLM_BINARY, args, extra_env, stdout_to);
}

/// True when `err` is exactly one line "ERROR: <message>\n" (what every failure must print).
inline bool is_one_error_line(const std::string& err) {
  return err.rfind("ERROR: ", 0) == 0 && err.size() > 8 && err.back() == '\n' &&
         err.find('\n') == err.size() - 1;
}

inline std::string llada_path() {
  return reference("tiny-llada-q4km.gguf").string();
}
inline std::string dream_path() {
  return reference("tiny-dream-q4km.gguf").string();
}

}  // namespace dllm::test
