// TempPath and remove_temp_files_on_signals: a signal removes the live temporary files and the process
// still dies of that signal (what a shell reports as 128 + signal). The signal tests run in a child
// process (EXPECT_EXIT forks), so the handlers are installed there only.
#include "base/temp_path.h"

#include <unistd.h>

#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dllm::TempPath;
using dllm::test::TempDir;

TEST(TempPath, RemovedOnDestructionUnlessReleased) {
  TempDir dir;
  const fs::path a = dir / "a.tmp", b = dir / "b.tmp";
  {
    TempPath ta(a.string()), tb(b.string());
    std::ofstream(a) << "x";
    std::ofstream(b) << "y";
    tb.release();
    tb.release();  // idempotent
  }
  EXPECT_FALSE(fs::exists(a));
  EXPECT_TRUE(fs::exists(b));
}

TEST(TempPath, UniqueNamesBesideThePath) {
  const std::string a = dllm::unique_temp_name("/x/out.f32"), b = dllm::unique_temp_name("/x/out.f32");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("/x/out.f32.tmp." + std::to_string(::getpid()) + ".", 0), 0u) << a;
}

TEST(TempPath, TheTableHasRoomForKMaxTempPathsAndSaysWhenFull) {
  TempDir dir;
  std::vector<std::unique_ptr<TempPath>> live;
  for (size_t i = 0; i < dllm::kMaxTempPaths; ++i)
    live.push_back(std::make_unique<TempPath>((dir / ("t" + std::to_string(i))).string()));
  EXPECT_THROW(TempPath((dir / "one-too-many").string()), dllm::Error);
  live.pop_back();  // a slot given back is used again
  EXPECT_NO_THROW(TempPath((dir / "fits-again").string()));
}

TEST(TempPath, APathLongerThanPathMaxIsRefused) {
  EXPECT_THROW(TempPath(std::string(PATH_MAX, 'a')), dllm::Error);
}

// The child writes half of an AtomicFile and a plain TempPath, then gets `sig`; it must die of `sig`
// with both temporary files gone and the committed file kept.
void expect_signal_removes_live_files(int sig) {
  TempDir dir;
  const fs::path out = dir / "out.f32", other = dir / "other.tmp", kept = dir / "kept.txt";
  EXPECT_EXIT(
      {
        dllm::remove_temp_files_on_signals();
        dllm::write_file_atomic(kept.string(), "done");
        dllm::AtomicFile f(out.string(), "--out");
        f.write(std::string(4096, 'x'));
        TempPath t(other.string());
        std::ofstream(other) << "partial";
        std::raise(sig);
        std::_Exit(0);  // not reached: the handler re-raises with the default action
      },
      ::testing::KilledBySignal(sig), "");
  EXPECT_EQ(dllm::test::names_in(dir.path()), std::vector<std::string>{"kept.txt"});
}

TEST(TempPath, SigintRemovesLiveFilesAndStillKillsTheProcess) {
  expect_signal_removes_live_files(SIGINT);
}

TEST(TempPath, SigtermAndSighupToo) {
  expect_signal_removes_live_files(SIGTERM);
  expect_signal_removes_live_files(SIGHUP);
}

TEST(TempPath, ASignalTheProcessIgnoresStaysIgnored) {
  // nohup starts a program with SIGHUP ignored; the handlers must not undo that.
  TempDir dir;
  const fs::path t = dir / "t.tmp";
  EXPECT_EXIT(
      {
        std::signal(SIGHUP, SIG_IGN);
        dllm::remove_temp_files_on_signals();
        TempPath p(t.string());
        std::ofstream(t) << "x";
        std::raise(SIGHUP);
        std::_Exit(fs::exists(t) ? 3 : 4);
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
