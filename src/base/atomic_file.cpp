// AtomicFile: temporary file, then rename (see atomic_file.h).
#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/error.h"

namespace dllm {

namespace {

namespace fs = std::filesystem;

std::string errno_text() {
  return std::strerror(errno);
}

/// `path` with its chain of symlinks followed to the name it finally designates (which need not exist).
/// 40 hops at most: the kernel's own limit (MAXSYMLINKS). Throws dllm::Error.
std::string follow_symlinks(const std::string& path, const std::string& name) {
  fs::path resolved = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat lst {};
    if (::lstat(resolved.c_str(), &lst) != 0 || !S_ISLNK(lst.st_mode)) return resolved.string();
    std::error_code ec;
    const fs::path next = fs::read_symlink(resolved, ec);
    if (ec) throw Error("cannot follow the symlink " + name + " (" + ec.message() + ")");
    resolved = next.is_absolute() ? next : resolved.parent_path() / next;
  }
  throw Error("cannot follow the symlink " + name + ": more than 40 links in a chain (a loop?)");
}

}  // namespace

AtomicFile::AtomicFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  const std::string name = what_ + " " + path_;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error(name + " is a directory: give the path of a file inside it");
    if (!S_ISREG(st.st_mode)) {
      // A pipe, a terminal, a device: through `path` itself, which also works where a link leads to
      // no real name (/dev/stdout -> /proc/self/fd/1 -> "pipe:[123]").
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) throw Error("cannot write " + name + " (" + errno_text() + ")");
      return;
    }
  }
  target_ = follow_symlinks(path_, name);
  fs::path parent = fs::path(target_).parent_path();
  if (parent.empty()) parent = ".";
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(name + ": the folder " + parent.string() + " does not exist; create it first");
  if (::access(parent.c_str(), W_OK) != 0)
    throw Error(name + ": cannot write in " + parent.string() + " (" + errno_text() + ")");
  if (::access(target_.c_str(), F_OK) == 0 && ::access(target_.c_str(), W_OK) != 0)
    throw Error(name + " is not writable (" + errno_text() + ")");
  temp_.emplace(unique_temp_name(target_));  // registered before the file exists
  fd_ = ::open(temp_->path().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) fail("cannot write " + name + ": cannot create " + temp_->path() + " (" + errno_text() + ")");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  // temp_'s destructor removes the temporary file unless commit() released it.
}

void AtomicFile::fail(const std::string& message) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  temp_.reset();  // removes the temporary file
  throw Error(message);
}

void AtomicFile::write(const void* data, size_t n_bytes) {
  if (fd_ < 0) throw Error("cannot write " + what_ + " " + path_ + ": already closed");
  const char* p = static_cast<const char*>(data);
  while (n_bytes > 0) {
    const ssize_t n = ::write(fd_, p, n_bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      fail("cannot write " + what_ + " " + path_ + " (" + (n < 0 ? errno_text() : "no progress") + ")");
    p += n;
    n_bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("cannot write " + what_ + " " + path_ + ": already closed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot write " + what_ + " " + path_ + " (" + errno_text() + ")");
  if (!temp_) return;
  if (std::rename(temp_->path().c_str(), target_.c_str()) != 0)
    fail("cannot write " + what_ + " " + path_ + ": cannot rename " + temp_->path() + " over " + target_ +
         " (" + errno_text() + ")");
  temp_->release();
}

void write_file_atomic(const std::string& path, std::string_view content, const std::string& what) {
  AtomicFile f(path, what);
  f.write(content);
  f.commit();
}

}  // namespace dllm
