// Temporary files that must not outlive an interrupted run. A TempPath is removed when it goes out of
// scope and, while it lives, by the SIGINT / SIGTERM / SIGHUP handlers that
// remove_temp_files_on_signals() installs: Ctrl-C during `logits --out big.f32` leaves no
// big.f32.tmp.* behind. The handlers read a fixed table of paths and call unlink(2) only, both
// async-signal-safe (signal-safety(7)).
#pragma once

#include <cstddef>
#include <string>

namespace dllm {

/// How many TempPaths may be alive at once (the handlers' table is fixed so that they never allocate).
inline constexpr size_t kMaxTempPaths = 64;

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP (once; later calls do nothing). A signal the
/// process was started with ignored (nohup, a background job of a non-interactive shell) stays
/// ignored. The handler unlinks every live TempPath, restores the default action and raises the signal
/// again, so the process still dies of it: its parent sees the same status as without the handler
/// (a shell reports 128 + signal, 130 for Ctrl-C). Call it from main(), before other threads start.
void remove_temp_files_on_signals();

/// "<path>.tmp.<pid>.<n>": a name beside `path`, unique per process and per call, so concurrent
/// writers (threads or processes) of one destination never share a temporary file.
std::string unique_temp_name(const std::string& path);

/// A path that is removed (unlink) on destruction unless release() was called, and by the handlers
/// of remove_temp_files_on_signals() while it is registered. Register before creating the file, so
/// there is no moment when the file exists and the handlers do not know it. Not copyable.
class TempPath {
 public:
  /// Registers `path`. Throws dllm::Error when kMaxTempPaths are already alive or when the path is
  /// longer than PATH_MAX.
  explicit TempPath(std::string path);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;

  const std::string& path() const { return path_; }

  /// Forgets the path without removing it (call after renaming the file away). Idempotent.
  void release();

 private:
  std::string path_;
  int slot_ = -1;  ///< index in the handlers' table; -1 once released
};

}  // namespace dllm
