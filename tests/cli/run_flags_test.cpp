// Flags of `dllm run` and `dllm tokenize` through the real binary: flags that a combination makes
// useless say so (a `warning:` naming the flag, and the --json `sampler` line says what ran), value
// errors say the accepted range and use the flag names the user typed, and prompts come from a file
// or standard input as well as from argv. A long canvas gets a note before its first step, and
// --verbose prints each step's progress.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

bool has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::vector<std::string> warnings_of(const json& j) {
  return j.at("warnings").get<std::vector<std::string>>();
}

bool any_starts_with(const std::vector<std::string>& v, const std::string& prefix) {
  for (const auto& s : v)
    if (s.rfind(prefix, 0) == 0) return true;
  return false;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// ---- flags that do nothing ----

TEST(RunFlags, StepsWithThresholdWarnsAndTheSamplerLineSaysWhatRan) {
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                          "--threshold", "0.5", "--steps", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "warning: --steps is not used with --threshold")) << r.err;
  json j = json::parse(r.out);
  EXPECT_TRUE(any_starts_with(warnings_of(j), "--steps is not used with --threshold")) << j.dump();
  const std::string sampler = j.at("sampler");
  EXPECT_TRUE(has(sampler, "threshold 0.5")) << sampler;
  EXPECT_FALSE(has(sampler, "steps 2")) << sampler;  // what ran: threshold decoding, no step count

  // Dream's threshold loop also has no use for --alg.
  r = run_dllm({"run", "--model", dream_path(), "--prompt", "Hi", "--max-tokens", "8", "--threshold", "0.5",
                "--alg", "topk_margin", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "warning: --alg is not used with --threshold")) << r.err;
  j = json::parse(r.out);
  EXPECT_FALSE(has(j.at("sampler").get<std::string>(), "topk_margin")) << j.at("sampler");

  // Without --steps there is nothing to warn about; without --threshold the line names the steps.
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--threshold", "0.5",
                "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.err, "warning:")) << r.err;
  r = run_dllm(
      {"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--steps", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(json::parse(r.out).at("sampler").get<std::string>(), "steps 8"));
}

TEST(RunFlags, SystemWithNoChatWarnsInRunAndTokenize) {
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--system",
                          "Be brief.", "--no-chat", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "warning: --system is ignored with --no-chat")) << r.err;
  EXPECT_TRUE(any_starts_with(warnings_of(json::parse(r.out)), "--system is ignored")) << r.out;

  r = run_dllm({"tokenize", "--model", llada_path(), "--prompt", "Hi", "--system", "Be brief.", "--no-chat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "warning: --system is ignored with --no-chat")) << r.err;

  // With the chat template the system message is used: no warning.
  r = run_dllm({"tokenize", "--model", llada_path(), "--prompt", "Hi", "--system", "Be brief."});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// ---- messages that name the range and the flags ----

TEST(RunFlags, SeedTakesTheWholeUint64Range) {
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--seed",
                          "18446744073709551615", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("seed").get<uint64_t>(), 18446744073709551615ull);

  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--seed", "18446744073709551616"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "--seed: must be a whole number from 0 to 18446744073709551615")) << r.err;

  r = run_dllm({"run", "--help"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r.out, "--seed INT:INT in [0, 18446744073709551615]")) << r.out;
  EXPECT_FALSE(has(r.out, "UINT")) << r.out;
}

TEST(RunFlags, NumbersTooLargeSayTheRange) {
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "-n", "99999999999999999999"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err,
                  "--max-tokens: must be a whole number from 1 to 9223372036854775807, got "
                  "'99999999999999999999'"))
      << r.err;
  // Not a number at all, or one below the minimum: the rule without the range.
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "-n", "abc"});
  EXPECT_TRUE(has(r.err, "--max-tokens: must be a whole number >= 1, got 'abc'")) << r.err;
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "-n", "0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "--max-tokens: must be a whole number >= 1, got '0'")) << r.err;
  // The option last, without its value.
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "-n"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "ERROR: --max-tokens: needs a value (see 'dllm run --help')")) << r.err;

  TempDir dir;
  r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--rows", "99999999999999999999",
                "--out", (dir / "l.f32").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "--rows: 99999999999999999999 is out of range for a position")) << r.err;
  EXPECT_FALSE(has(r.err, "token id")) << r.err;
  r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--rows", "x", "--out",
                (dir / "l.f32").string()});
  EXPECT_TRUE(has(r.err, "--rows: 'x' is not a position")) << r.err;
}

TEST(RunFlags, CombinationErrorsNameTheFlags) {
  RunResult r = run_dllm(
      {"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "20", "--block-length", "40"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "ERROR: --max-tokens 20 is not a multiple of --block-length 40: use --max-tokens 40, or a "
            "--block-length that divides 20 (1, 2, 4, 5, 10, 20)\n");
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "64", "--steps", "5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "ERROR: --steps 5 is not a multiple of the block count 2 (--max-tokens 64 / --block-length 32): use "
      "--steps 4 or 6\n");
  r = run_dllm({"run", "--model", dream_path(), "--prompt", "Hi", "--max-tokens", "8", "--cfg-scale", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "ERROR: --cfg-scale applies to LLaDA models")) << r.err;
  // The warning about many tokens per step names them too.
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "64", "--steps", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "(--max-tokens 64, --steps 8)")) << r.err;
  EXPECT_FALSE(has(r.err, "max_tokens")) << r.err;
}

// ---- prompts from a file or standard input ----

TEST(RunFlags, PromptFromAFileOrStandardInput) {
  TempDir dir;
  const std::string text = "What is 2+2? Explain, then answer.";
  const std::string file = (dir / "prompt.txt").string();
  write_text(file, text + "\n");  // the newline an editor or echo leaves is not part of the prompt
  const RunResult want = run_dllm({"tokenize", "--model", dream_path(), "--prompt", text});
  ASSERT_EQ(want.exit_code, 0) << want.err;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--prompt-file", file}, {"--prompt", "-"}, {"--prompt-file", "-"}, {"-"}}) {
    std::vector<std::string> a = {"tokenize", "--model", dream_path()};
    a.insert(a.end(), args.begin(), args.end());
    const RunResult r = run_program(DLLM_BINARY, a, {}, "", false, file);  // stdin: the same file
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out, want.out) << args[0];
  }
  // run reads it the same way: the same answer as with --prompt.
  const RunResult run_flag =
      run_dllm({"run", "--model", llada_path(), "--prompt", text, "--max-tokens", "8", "--seed", "3"});
  const RunResult run_file =
      run_dllm({"run", "--model", llada_path(), "--prompt-file", file, "--max-tokens", "8", "--seed", "3"});
  ASSERT_EQ(run_file.exit_code, 0) << run_file.err;
  EXPECT_EQ(run_file.out, run_flag.out);
  // Only one trailing newline goes; the ones inside stay.
  write_text(file, "a\n\nb\n\n");
  const RunResult two = run_dllm({"tokenize", "--model", dream_path(), "--prompt-file", file, "--no-chat"});
  const RunResult inside =
      run_dllm({"tokenize", "--model", dream_path(), "--prompt", "a\n\nb\n", "--no-chat"});
  EXPECT_EQ(two.out, inside.out);
}

TEST(RunFlags, PromptFileErrors) {
  TempDir dir;
  const std::string missing = (dir / "no-such-prompt.txt").string();
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt-file", missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ERROR: cannot read prompt file " + missing +
                       " (No such file or directory): check the path given to --prompt-file\n");
  const std::string file = (dir / "p.txt").string();
  write_text(file, "Hi");
  r = run_dllm({"run", "--model", llada_path(), "--prompt-file", file, "--prompt", "Hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_TRUE(has(r.err, "--prompt-file")) << r.err;
  r = run_dllm({"run", "--model", llada_path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "--prompt-file FILE")) << r.err;
}

// ---- long canvases and progress ----

/// Starts `dllm args` with stderr to `err_path`, waits until stderr holds `needle` or the process
/// ends (at most `timeout`), kills it if it still runs, and returns stderr.
std::string stderr_until(const std::vector<std::string>& args, const std::string& err_path,
                         const std::string& needle, std::chrono::seconds timeout) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = {DLLM_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, DLLM_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "posix_spawn failed";
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string err;
  int status = 0;
  bool exited = false;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto bytes = read_file(err_path);
    err.assign(bytes.begin(), bytes.end());
    if (has(err, needle)) break;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  const auto bytes = read_file(err_path);
  return std::string(bytes.begin(), bytes.end());
}

TEST(RunFlags, LongCanvasGetsANoteBeforeTheFirstStep) {
  TempDir dir;
  // 20 prompt tokens + 4100 masks on the tiny Dream model (context 131072). Its first step takes
  // minutes on a busy machine: the note must come before it, so the test stops the run there.
  const std::string err = stderr_until(
      {"run", "--model", dream_path(), "--prompt", "hi", "--max-tokens", "4100", "--steps", "1", "--verbose"},
      (dir / "err").string(), "note: the canvas is", std::chrono::seconds(120));
  EXPECT_TRUE(has(err, "note: the canvas is 4120 positions (prompt 20 + --max-tokens 4100)")) << err;
  EXPECT_FALSE(has(err, "step 0:")) << "the note must come before the first step:\n" << err;
  // A short canvas has no such note.
  const RunResult r = run_dllm({"run", "--model", dream_path(), "--prompt", "hi", "--max-tokens", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has(r.err, "note: the canvas")) << r.err;
}

TEST(RunFlags, VerboseStepLinesShowProgress) {
  const RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                                "--no-early-stop", "--verbose"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 8 steps planned (one token each): every step line says how far the run is.
  for (int i = 1; i <= 8; ++i)
    EXPECT_TRUE(has(r.err, "; " + std::to_string(i) + "/8 steps, ")) << i << "\n" << r.err;
  EXPECT_TRUE(has(r.err, "elapsed, ")) << r.err;
}

}  // namespace
}  // namespace dllm::test
