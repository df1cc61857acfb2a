// Runs the built `dllm` binary (DLLM_BINARY) with arguments, without a shell, and captures its exit
// code, stdout and stderr separately: the CLI tests check all three.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

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

/// Runs `program` with `args` (argv[1..]); stdin is /dev/null. Extra environment entries ("K=V") are
/// added to the current environment. stdout goes to `stdout_to` when given (then RunResult::out
/// stays empty), else it is captured.
inline RunResult run_program(const std::string& program, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env = {},
                             const std::string& stdout_to = "") {
  TempDir dir;
  const std::string out_path = stdout_to.empty() ? (dir / "stdout").string() : stdout_to;
  const std::string err_path = (dir / "stderr").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  RunResult r;
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    r.err = "posix_spawn failed for " + program;
    return r;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const auto out = stdout_to.empty() ? read_file(out_path) : std::vector<char>{};
  const auto err = read_file(err_path);
  r.out.assign(out.begin(), out.end());
  r.err.assign(err.begin(), err.end());
  return r;
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
