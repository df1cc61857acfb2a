// What `logits --out` and `run --trace` leave behind, through the binary: nothing when the run is
// interrupted (Ctrl-C is SIGINT; the process must still end by it, which a shell reports as 130), and
// the bytes themselves when the file is a pipe (/dev/stdout into `|`).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cli/run_binary.h"

namespace {

namespace fs = std::filesystem;
using namespace dllm::test;

/// Starts `dllm args`, waits (up to 120 s) until `dir` holds a file whose name starts with `prefix`
/// and has at least `min_bytes`, then sends `sig` and waits for the end. Fails the test when the
/// process ended first or no such file appeared.
RunResult interrupt_when_written(const std::vector<std::string>& args, const fs::path& dir,
                                 const std::string& prefix, uintmax_t min_bytes, int sig) {
  Process p(DLLM_BINARY, args);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  bool seen = false;
  while (!seen && std::chrono::steady_clock::now() < deadline && p.running()) {
    for (const auto& e : fs::directory_iterator(dir)) {
      std::error_code ec;
      const uintmax_t n = fs::file_size(e.path(), ec);
      seen = seen || (e.path().filename().string().rfind(prefix, 0) == 0 && !ec && n >= min_bytes);
    }
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!seen) {
    ADD_FAILURE() << "no " << prefix << "* of " << min_bytes << "+ bytes appeared in " << dir;
    return p.wait();
  }
  EXPECT_EQ(::kill(p.pid(), sig), 0);
  return p.wait();
}

/// `logits` over 512 positions x the tiny model's vocabulary (about 100 MB of logits): the temporary
/// file exists from before the model loads until the rename after the write.
std::vector<std::string> big_logits_args(const fs::path& out) {
  std::string tokens;
  for (int i = 0; i < 512; ++i) tokens += std::to_string(100 + i) + " ";
  return {"logits", "--model", llada_path(), "--tokens", tokens, "--out", out.string(), "--threads", "2"};
}

TEST(OutputFiles, CtrlCDuringLogitsLeavesNoTemporaryFile) {
  TempDir dir;
  const RunResult r =
      interrupt_when_written(big_logits_args(dir / "out.f32"), dir.path(), "out.f32.tmp", 0, SIGINT);
  EXPECT_EQ(r.exit_code, 130) << r.err;  // 128 + SIGINT: the process still ends by the signal
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{});
}

TEST(OutputFiles, SigtermDuringLogitsToo) {
  TempDir dir;
  const RunResult r =
      interrupt_when_written(big_logits_args(dir / "out.f32"), dir.path(), "out.f32.tmp", 0, SIGTERM);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{});
}

TEST(OutputFiles, CtrlCDuringRunLeavesNoTrace) {
  // A trace is complete or absent: once its first line is written, Ctrl-C takes the lines with it.
  TempDir dir;
  const RunResult r = interrupt_when_written(
      {"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "512", "--block-length", "512",
       "--steps", "512", "--no-early-stop", "--threads", "2", "--trace", (dir / "trace.jsonl").string()},
      dir.path(), "trace.jsonl", 1, SIGINT);
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{});
}

TEST(OutputFiles, LogitsToStdoutThroughAPipe) {
  // `dllm logits --out /dev/stdout | consumer`: /dev/stdout leads to /proc/self/fd/1 and then to
  // "pipe:[N]", a name with no file behind it; the bytes go down the pipe itself.
  TempDir dir;
  const fs::path plain = dir / "plain.f32";
  RunResult r = run_dllm(
      {"logits", "--model", llada_path(), "--tokens", "1 2 3", "--rows", "1 2", "--out", plain.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  Process p(DLLM_BINARY,
            {"logits", "--model", llada_path(), "--tokens", "1 2 3", "--rows", "1 2", "--out", "/dev/stdout"},
            {}, "", fds[1]);
  ::close(fds[1]);
  std::vector<char> piped;
  char buf[65536];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0);
    piped.insert(piped.end(), buf, buf + n);
  }
  ::close(fds[0]);
  r = p.wait();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_FALSE(piped.empty());
  EXPECT_EQ(piped, read_file(plain));
}

}  // namespace
