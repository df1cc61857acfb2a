// The Hugging Face cache layout on disk (see hub.h for the tree) and the verified-once memo.
// Internal to src/hub; every write goes to a temporary name first and is renamed into place
// (base/atomic_file.h, base/temp_path.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dllm::hub {

namespace fs = std::filesystem;

/// "models--org--repo" for "org/repo".
std::string repo_folder_name(const std::string& repo);
/// "org/repo" for "models--org--repo"; empty when the name is not of that form.
std::string repo_from_folder_name(const std::string& folder);

/// Commit the cache maps `revision` to: the revision itself when it is a 40-hex commit with a
/// snapshot folder, else the content of refs/<revision>; nullopt when unknown.
std::optional<std::string> cached_commit(const fs::path& repo_dir, const std::string& revision);

/// Repo-relative paths of the files in snapshots/<commit> whose link target exists.
std::vector<std::string> snapshot_files(const fs::path& repo_dir, const std::string& commit);

/// Makes snapshots/<commit>/<filename> a relative symlink to blobs/<sha256> (replacing any old link
/// atomically). Throws dllm::Error.
fs::path link_snapshot(const fs::path& repo_dir, const std::string& commit, const std::string& filename,
                       const std::string& sha256);

/// An exclusive advisory lock (flock) on a file, released on destruction.
class FileLock {
 public:
  /// Blocks until the lock is held; `on_wait` is called once first if another process holds it.
  explicit FileLock(const fs::path& path, const std::function<void()>& on_wait = {});
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

/// The verified-once memo: a JSON file mapping a blob's canonical path to the size, mtime (ns) and
/// sha256 it had when its hash last matched. A file whose size or mtime changed is hashed again.
class VerifiedDb {
 public:
  explicit VerifiedDb(fs::path db_path) : path_(std::move(db_path)) {}
  /// True when `blob` was verified against `sha256` with its current size and mtime.
  bool is_verified(const fs::path& blob, const std::string& sha256) const;
  /// Records that `blob` (as it is now on disk) matched `sha256`. Failures to write are ignored
  /// (the next run hashes again).
  void mark_verified(const fs::path& blob, const std::string& sha256) const;
  /// Drops any entry of `blob`.
  void forget(const fs::path& blob) const;

 private:
  fs::path path_;
};

}  // namespace dllm::hub
