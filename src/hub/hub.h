// Hugging Face hub client: turns a model spec into a local GGUF path, downloading into the standard
// hub cache when needed, so huggingface_hub, llama.cpp and dllm share one copy.
//
// Hub API used (as huggingface_hub file_download.py / hf_api.py call it):
//   GET {endpoint}/api/models/{org}/{repo}/revision/{revision}?blobs=true
//       -> {"sha": "<commit>", "siblings": [{"rfilename", "size", "lfs": {"sha256", "size"}}]}
//   GET {endpoint}/{org}/{repo}/resolve/{commit}/{file}
//       -> 302 to a CDN (Location), headers X-Repo-Commit, X-Linked-Etag ("<sha256>"), X-Linked-Size;
//          the CDN answers Range requests (206) for resuming.
// Cache layout ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub):
//   models--{org}--{repo}/blobs/<sha256>                       the file's bytes
//   models--{org}--{repo}/blobs/<sha256>.incomplete            a download in progress (resumed by Range)
//   models--{org}--{repo}/snapshots/<commit>/<file>            symlink -> ../../blobs/<sha256>
//   models--{org}--{repo}/refs/<revision>                      the commit hash, no newline
//   .locks/models--{org}--{repo}/<sha256>.lock                 flock held while downloading
// Nothing partial is ever at a trusted path: bytes land in blobs/<sha>.incomplete, are checked against
// the sha256 the hub publishes, then renamed; links and refs are written to a temp name and renamed.
//
// Errors: every failure is a dllm::Error (exit 1) whose one-line message names what went wrong and
// what to do (set HF_TOKEN and accept the licence; check the repo name; try again later; use a cached
// model with --offline; run `./dllm pull <spec>` on a connected machine). Bad specs are
// dllm::UsageError (exit 2). Nothing here prints except the progress bar and `on_message` lines.
// Thread safety: the functions may run concurrently (also across processes) on one cache.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/model_ref.h"

namespace dllm::hub {

/// How to reach the hub and where the cache is. Build with from_env() and override fields.
struct HubOptions {
  std::string endpoint = "https://huggingface.co";  ///< HF_ENDPOINT; no trailing '/'
  std::string token;                  ///< HF_TOKEN (else the file $HF_TOKEN_PATH or $HF_HOME/token)
  std::filesystem::path cache_dir;    ///< hub cache root (see the top of this file)
  std::filesystem::path verified_db;  ///< $XDG_CACHE_HOME/dllm/verified.json or ~/.cache/dllm/...
  std::string revision = "main";      ///< branch, tag or commit
  bool offline = false;               ///< HF_HUB_OFFLINE=1/true/yes/on; the CLI sets it for --offline
  bool progress = false;              ///< draw a progress bar on stderr (from_env: stderr is a tty)
  int connect_timeout_s = 10;         ///< TCP/TLS connect limit
  int stall_timeout_s = 30;           ///< abort when no byte arrives for this long (timeout error)
  int max_attempts = 3;               ///< tries of one download when the connection drops mid-file
  int retry_delay_ms = 500;           ///< wait between those tries
  /// Status lines for the user ("downloading org/repo file (4.7 GiB)", "verifying ..."); empty = quiet.
  std::function<void(const std::string&)> on_message;

  /// Reads HF_ENDPOINT, HF_TOKEN, HF_TOKEN_PATH, HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE,
  /// XDG_CACHE_HOME, HOME; progress = isatty(stderr). Never throws.
  static HubOptions from_env();
};

/// One file of a repo, as the hub describes it (lookup_remote) or as found in the cache.
struct RepoFile {
  std::string repo;      ///< "org/repo"
  std::string filename;  ///< repo-relative path, e.g. "llada-8b-instruct-Q4_K_M.gguf"
  std::string commit;    ///< 40-hex commit the revision points to
  std::string sha256;    ///< 64-hex content hash (the LFS oid)
  uint64_t size_bytes = 0;
};

/// The outcome of resolve/pull for a repo spec.
struct ResolvedModel {
  std::string path;         ///< snapshots/<commit>/<file> (a symlink into blobs/); or the local path
  RepoFile file;            ///< empty fields for a local-path spec
  bool downloaded = false;  ///< bytes came over the network in this call
};

/// The local GGUF file for `spec` (see parse_model_ref). A path is returned as is after checking it
/// exists (dllm::Error "model file not found" otherwise). A repo spec is looked up in the cache first
/// (refs/<revision> -> snapshots/<commit>, choose_gguf over the cached files) and used without any
/// network access when present (without :QUANT the choice rules run over the cached files, so a repo
/// whose Q8_0 alone is cached resolves to that; `pull` asks the hub); its sha256 is verified once and
/// remembered in verified_db (keyed by path, size, mtime). When absent it is downloaded (as pull). A cached
/// file that fails verification is deleted and the error says the next run downloads it again. Offline and
/// absent: the error prints the `./dllm pull <spec>` command for a connected machine.
std::string resolve_model(const std::string& spec, const HubOptions& opts);

/// Like resolve_model but always asks the hub which commit the revision is at (unless offline, where
/// it only checks the cache), updates refs/<revision>, and downloads the chosen file when its blob is
/// missing. When the hub cannot be reached at all (connection refused, unknown host) and the cache
/// has the file, the cached copy is used (an on_message line says so), as huggingface_hub does.
/// Throws dllm::UsageError for a local-path spec.
ResolvedModel pull(const std::string& spec, const HubOptions& opts);

/// Which file `spec` (a repo spec) names on the hub and its size, without downloading it: for the
/// setup's "download 4.7 GiB?" question. Throws as pull does; dllm::UsageError for a path spec.
RepoFile lookup_remote(const std::string& spec, const HubOptions& opts);

/// The cached file a repo spec names (the choice rules of resolve_model run over the cached files),
/// without network access and without verifying it: for choosing a default model. nullopt when the
/// spec is a path, malformed, or not in the cache. Never throws.
std::optional<ResolvedModel> find_cached(const std::string& spec, const HubOptions& opts);

/// The GGUF files present in the cache (every models--*/snapshots/*/**.gguf whose blob exists),
/// for `doctor`. Never throws; an unreadable cache gives an empty list.
std::vector<ResolvedModel> list_cache(const HubOptions& opts);

/// "./dllm pull <spec>": the command to print when a model is missing offline.
std::string pull_command(const std::string& spec);

/// models--{org}--{repo} folder of `repo` in the cache (it may not exist).
std::filesystem::path repo_cache_dir(const HubOptions& opts, const std::string& repo);

}  // namespace dllm::hub
