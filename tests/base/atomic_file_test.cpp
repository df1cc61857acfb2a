// AtomicFile against what rename(2), symlinks and pipes do (POSIX): the destination holds the old bytes
// or all the new ones, never a part; links stay links; a pipe gets the bytes directly.
#include "base/atomic_file.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using dllm::AtomicFile;
using dllm::test::names_in;
using dllm::test::read_file;
using dllm::test::TempDir;

std::string contents(const fs::path& p) {
  const std::vector<char> b = read_file(p);
  return std::string(b.begin(), b.end());
}

TEST(AtomicFile, NothingAtThePathUntilCommit) {
  TempDir dir;
  const fs::path out = dir / "out.bin";
  AtomicFile f(out.string(), "--out");
  EXPECT_FALSE(f.in_place());
  EXPECT_EQ(fs::path(f.temp_path()).parent_path(), dir.path());  // beside it: rename stays on one fs
  f.write("abc");
  f.write(std::string(100000, 'x'));
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(fs::file_size(f.temp_path()), 100003u);
  f.commit();
  EXPECT_EQ(contents(out), "abc" + std::string(100000, 'x'));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, WithoutCommitTheOldFileStaysAndTheTemporaryGoes) {
  TempDir dir;
  const fs::path out = dir / "out.bin";
  { std::ofstream(out) << "old"; }
  {
    AtomicFile f(out.string(), "--out");
    f.write("new bytes that never land");
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }
  EXPECT_EQ(contents(out), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, ReplacesTheTargetOfASymlinkAndKeepsTheLink) {
  TempDir dir;
  fs::create_directory(dir / "real");
  const fs::path target = dir / "real" / "t.bin";
  { std::ofstream(target) << "old"; }
  fs::create_symlink("real/t.bin", dir / "link1");   // relative, resolved from the link's folder
  fs::create_symlink(dir / "link1", dir / "link2");  // a chain
  dllm::write_file_atomic((dir / "link2").string(), "new");
  EXPECT_TRUE(fs::is_symlink(dir / "link1"));
  EXPECT_TRUE(fs::is_symlink(dir / "link2"));
  EXPECT_EQ(contents(target), "new");
  EXPECT_EQ(names_in(dir / "real"), std::vector<std::string>{"t.bin"});
  // A dangling link: its target is created.
  fs::create_symlink("real/fresh.bin", dir / "dangling");
  dllm::write_file_atomic((dir / "dangling").string(), "fresh");
  EXPECT_TRUE(fs::is_symlink(dir / "dangling"));
  EXPECT_EQ(contents(dir / "real" / "fresh.bin"), "fresh");
}

TEST(AtomicFile, AFifoIsWrittenInPlace) {
  TempDir dir;
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = contents(fifo); });  // opening for reading unblocks the writer's open
  {
    AtomicFile f(fifo.string(), "--out");
    EXPECT_TRUE(f.in_place());
    EXPECT_EQ(f.temp_path(), "");
    f.write("through the pipe");
    f.commit();
  }
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"fifo"});
}

TEST(AtomicFile, DevNullStaysADevice) {
  AtomicFile f("/dev/null", "--out");
  EXPECT_TRUE(f.in_place());
  f.write("discarded");
  f.commit();
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(AtomicFile, PathsThatCannotBeWrittenFailBeforeAnythingIsCreated) {
  TempDir dir;
  try {
    AtomicFile f(dir.path().string(), "--out");
    ADD_FAILURE() << "a directory was accepted";
  } catch (const dllm::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--out " + dir.path().string() + " is a directory: give the path of a file inside it");
  }
  const std::string missing = (dir / "no-such-folder" / "x.bin").string();
  try {
    AtomicFile f(missing, "trace file");
    ADD_FAILURE() << "a missing folder was accepted";
  } catch (const dllm::Error& e) {
    EXPECT_EQ(std::string(e.what()), "trace file " + missing + ": the folder " +
                                         (dir / "no-such-folder").string() +
                                         " does not exist; create it first");
  }
  fs::create_symlink("loop-b", dir / "loop-a");
  fs::create_symlink("loop-a", dir / "loop-b");
  EXPECT_THROW(AtomicFile((dir / "loop-a").string(), "--out"), dllm::Error);
  EXPECT_EQ(names_in(dir.path()), (std::vector<std::string>{"loop-a", "loop-b"}));
}

/// In a child process (the limit stays there): writes more than a file-size limit allows, so write(2)
/// fails with EFBIG (setrlimit(2); SIGXFSZ ignored so the call returns the error). 0 when AtomicFile
/// threw naming the file and its temporary file is gone.
int write_past_the_file_size_limit(const fs::path& out) {
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = 1000;
  ::setrlimit(RLIMIT_FSIZE, &limit);
  AtomicFile f(out.string(), "--out");
  const std::string temp = f.temp_path();
  try {
    f.write(std::string(5000, 'x'));
  } catch (const dllm::Error& e) {
    return std::string(e.what()).find("--out " + out.string()) != std::string::npos && !fs::exists(temp) ? 0
                                                                                                         : 1;
  }
  return 2;
}

TEST(AtomicFile, AFailedWriteRemovesTheTemporaryFileAndKeepsTheOldOne) {
  TempDir dir;
  const fs::path out = dir / "x.bin";
  { std::ofstream(out) << "old"; }
  EXPECT_EXIT(std::_Exit(write_past_the_file_size_limit(out)), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(contents(out), "old");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"x.bin"});
}

TEST(AtomicFile, NothingMayBeWrittenAfterCommit) {
  TempDir dir;
  AtomicFile f((dir / "x.bin").string(), "--out");
  f.write("abc");
  f.commit();
  EXPECT_THROW(f.write("more"), dllm::Error);
  EXPECT_THROW(f.commit(), dllm::Error);
  EXPECT_EQ(contents(dir / "x.bin"), "abc");
}

}  // namespace
