// Hugging Face cache layout and the verified-once memo (see cache.h).
#include "hub/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/temp_path.h"
#include "hub/sha256.h"

namespace dllm::hub {
namespace {

bool is_commit_hex(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// Size and mtime (ns since the epoch) of a file, following links; nullopt when absent.
std::optional<std::pair<uint64_t, int64_t>> stat_file(const fs::path& p) {
  struct stat st;
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  int64_t mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return std::make_pair(static_cast<uint64_t>(st.st_size), mtime_ns);
}

nlohmann::json load_json(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    if (j.is_object()) return j;
  } catch (const std::exception&) {
    // A damaged memo only costs a re-hash: start over.
  }
  return nlohmann::json::object();
}

}  // namespace

std::string repo_folder_name(const std::string& repo) {
  std::string out = "models--";
  for (char c : repo) {
    if (c == '/') {
      out += "--";
    } else {
      out += c;
    }
  }
  return out;
}

std::string repo_from_folder_name(const std::string& folder) {
  const std::string prefix = "models--";
  if (folder.rfind(prefix, 0) != 0) return "";
  std::string rest = folder.substr(prefix.size());
  size_t sep = rest.find("--");
  if (sep == std::string::npos) return rest;  // a repo without an org (e.g. "gpt2")
  return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

std::optional<std::string> cached_commit(const fs::path& repo_dir, const std::string& revision) {
  std::error_code ec;
  if (is_commit_hex(revision) && fs::is_directory(repo_dir / "snapshots" / revision, ec)) return revision;
  std::ifstream f(repo_dir / "refs" / revision);
  if (!f) return std::nullopt;
  std::string commit;
  std::getline(f, commit);
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  if (commit.empty() || !fs::is_directory(repo_dir / "snapshots" / commit, ec)) return std::nullopt;
  return commit;
}

std::vector<std::string> snapshot_files(const fs::path& repo_dir, const std::string& commit) {
  std::vector<std::string> out;
  fs::path root = repo_dir / "snapshots" / commit;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) continue;
    if (!fs::exists(it->path(), ec2)) continue;  // dangling link: its blob was removed
    out.push_back(
        it->path().lexically_relative(root).generic_string());  // not fs::relative: it follows links
  }
  std::sort(out.begin(), out.end());
  return out;
}

fs::path link_snapshot(const fs::path& repo_dir, const std::string& commit, const std::string& filename,
                       const std::string& sha256) {
  fs::path link = repo_dir / "snapshots" / commit / filename;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) throw Error("cannot create " + link.parent_path().string() + ": " + ec.message());
  // snapshots/<commit>/<a/b/file> -> ../../(../..)blobs/<sha>: one "../" per folder below the repo dir.
  std::string target;
  size_t depth = 2 + static_cast<size_t>(std::count(filename.begin(), filename.end(), '/'));
  for (size_t i = 0; i < depth; ++i) target += "../";
  target += "blobs/" + sha256;
  TempPath tmp(unique_temp_name(link.string()));  // removed if the rename fails or the run is interrupted
  fs::create_symlink(target, tmp.path(), ec);
  if (ec) throw Error("cannot create the link " + tmp.path() + ": " + ec.message());
  fs::rename(tmp.path(), link, ec);
  if (ec) throw Error("cannot rename the link " + tmp.path() + " to " + link.string() + ": " + ec.message());
  tmp.release();
  return link;
}

FileLock::FileLock(const fs::path& path, const std::function<void()>& on_wait) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (on_wait) on_wait();
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) throw Error("cannot lock " + path.string() + ": " + std::strerror(errno));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

bool VerifiedDb::is_verified(const fs::path& blob, const std::string& sha256) const {
  auto st = stat_file(blob);
  if (!st) return false;
  nlohmann::json db = load_json(path_);
  auto files = db.find("files");
  if (files == db.end() || !files->is_object()) return false;
  auto e = files->find(blob.string());
  if (e == files->end() || !e->is_object()) return false;
  return e->value("sha256", "") == sha256 && e->value("size", uint64_t(0)) == st->first &&
         e->value("mtime_ns", int64_t(0)) == st->second;
}

void VerifiedDb::mark_verified(const fs::path& blob, const std::string& sha256) const {
  auto st = stat_file(blob);
  if (!st) return;
  try {
    FileLock lock(path_.string() + ".lock");
    nlohmann::json db = load_json(path_);
    db["version"] = 1;
    db["files"][blob.string()] = {{"sha256", sha256}, {"size", st->first}, {"mtime_ns", st->second}};
    write_file_atomic(path_.string(), db.dump(1), "verified-files memo");
  } catch (const std::exception&) {
    // Not remembering only costs a re-hash next time.
  }
}

void VerifiedDb::forget(const fs::path& blob) const {
  try {
    FileLock lock(path_.string() + ".lock");
    nlohmann::json db = load_json(path_);
    if (db.contains("files") && db["files"].is_object() && db["files"].contains(blob.string())) {
      db["files"].erase(blob.string());
      write_file_atomic(path_.string(), db.dump(1), "verified-files memo");
    }
  } catch (const std::exception&) {
  }
}

}  // namespace dllm::hub
