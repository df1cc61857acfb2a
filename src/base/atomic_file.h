// Output files that appear at their path whole or not at all: `dllm logits --out`, `dllm run --trace`,
// the hub cache's refs and memo. The bytes go to a temporary file beside the destination, which is
// renamed over it once everything is written (rename(2) replaces a file atomically within one file
// system), so a failed or interrupted write never leaves a plausible-looking file. The temporary
// file is a TempPath: removed on failure, on destruction, and by the signal handlers of
// remove_temp_files_on_signals().
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/temp_path.h"

namespace dllm {

class AtomicFile {
 public:
  /// Opens the file that will become `path`, so a path that cannot be written fails before any work
  /// goes into its content. `what` names it in messages ("--out", "trace file"). Where the bytes go:
  /// - `path` is an existing file that is not a regular file (a pipe, a terminal, /dev/null,
  ///   /dev/stdout into a pipe; links followed): written directly ("in place"), since renaming over it
  ///   would replace it with a regular file. A failed write may leave part of the bytes there.
  /// - otherwise: `<target>.tmp.<pid>.<n>` beside `target`, the file `path` names once its chain of
  ///   symlinks is followed (also a dangling one), so that commit() replaces the link's target and
  ///   the link stays a link.
  /// Throws dllm::Error naming `what` and `path`: a directory, a missing folder, a folder or an
  /// existing file without write permission, a symlink that cannot be read or a loop of them, open(2)
  /// failing.
  AtomicFile(const std::string& path, const std::string& what);
  /// Without commit(): closes and removes the temporary file; `path` is left as it was.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// Appends n_bytes from data (the whole of it: short writes and EINTR are retried). Throws
  /// dllm::Error naming the file and the reason (ENOSPC: "No space left on device").
  void write(const void* data, size_t n_bytes);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }

  /// Closes the file and renames the temporary file over the target (in place: closes it). Nothing
  /// may be written afterwards. Throws dllm::Error when closing or renaming fails; the temporary file
  /// is removed then. No fsync: the rename guards against a failed or interrupted process, not
  /// against a power cut.
  void commit();

  /// True when the bytes go straight to `path` (see the constructor).
  bool in_place() const { return !temp_.has_value(); }
  /// The temporary file's name ("" in place).
  std::string temp_path() const { return temp_ ? temp_->path() : std::string(); }

 private:
  void fail(const std::string& message);  // closes, removes the temporary file, throws dllm::Error

  std::string path_;    ///< as given (for messages)
  std::string what_;    ///< "--out", "trace file"
  std::string target_;  ///< what commit() renames over (path_ with its symlinks followed)
  std::optional<TempPath> temp_;
  int fd_ = -1;
};

/// AtomicFile(path, what), write(content), commit(). Throws what those throw.
void write_file_atomic(const std::string& path, std::string_view content, const std::string& what = "file");

}  // namespace dllm
