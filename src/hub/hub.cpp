// Hugging Face hub client: model info, file choice, resumable verified download into the HF cache.
// Flow and API shapes are described in hub.h (after huggingface_hub file_download.py and hf_api.py).
#include "hub/hub.h"

#include <curl/curl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "base/atomic_file.h"
#include "base/error.h"
#include "hub/cache.h"
#include "hub/http.h"
#include "hub/model_info.h"
#include "hub/progress.h"
#include "hub/sha256.h"

namespace dllm::hub {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool env_true(const char* name) {
  std::string v = env(name);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

std::string read_first_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line;
  if (f) std::getline(f, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

void say(const HubOptions& o, const std::string& s) {
  if (o.on_message) o.on_message(s);
}

// ETag values come quoted and sometimes weak: W/"abc" -> abc.
std::string strip_etag(std::string s) {
  if (s.rfind("W/", 0) == 0) s = s.substr(2);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What a request was for, to word its errors.
struct What {
  std::string repo;
  std::string filename;  // empty: the model-info request
  std::string revision;
  std::string spec;
  std::string partial;  // a kept .incomplete file, mentioned in resumable errors
};

std::string resume_hint(const What& w) {
  return w.partial.empty() ? "" : " (the partial download is kept and resumed by the next run)";
}

// The hub could not be reached at all (no HTTP answer): pull falls back to a cached copy, as
// huggingface_hub's hf_hub_download does on connection errors.
class Unreachable : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_network(const HttpReply& r, const HubOptions& o, const What& w) {
  std::string host = r.host.empty() ? url_host(o.endpoint) : r.host;
  std::string doing =
      w.filename.empty() ? "looking up " + w.repo : "downloading " + w.repo + "/" + w.filename;
  switch (r.curl_code) {
    case CURLE_COULDNT_CONNECT:
      throw Unreachable("cannot connect to " + host + " (" + r.curl_error + ") while " + doing +
                        ": check the network and HF_ENDPOINT (now " + o.endpoint +
                        "), or run with --offline to use a model already in the cache");
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      throw Unreachable("cannot resolve the host name " + host + " while " + doing +
                        ": check the network, DNS and HF_ENDPOINT (now " + o.endpoint +
                        "), or run with --offline to use a model already in the cache");
    case CURLE_OPERATION_TIMEDOUT:
      throw Error("timeout: " + host + " sent nothing for " + std::to_string(o.stall_timeout_s) +
                  " s while " + doing + ": check the network, then run the same command again" +
                  resume_hint(w));
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
      throw Error("the connection to " + host + " dropped while " + doing + " (" + r.curl_error +
                  "): run the same command again" + resume_hint(w));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      throw Error("TLS error talking to " + host + " while " + doing + " (" + r.curl_error +
                  "): check the system clock and that the ca-certificates package is installed");
    default:
      throw Error("network error talking to " + host + " while " + doing + " (" + r.curl_error +
                  "): check the network, then run the same command again" + resume_hint(w));
  }
}

[[noreturn]] void throw_status(const HttpReply& r, const HubOptions& o, const What& w) {
  std::string code = r.last_header("x-error-code");
  std::string hf_msg = r.last_header("x-error-message");
  std::string page = o.endpoint + "/" + w.repo;
  std::string status = "HTTP " + std::to_string(r.status);
  std::string detail = hf_msg.empty() ? "" : " (hub says: " + hf_msg + ")";
  if (code == "RepoNotFound" || (r.status == 404 && w.filename.empty() && code.empty())) {
    throw Error(
        "repository " + w.repo + " not found on " + o.endpoint + " (" + status + ")" + detail +
        ": check the spelling of org/repo" +
        (o.token.empty() ? "; if it is private, set HF_TOKEN to an access token that can read it" : ""));
  }
  if (code == "RevisionNotFound") {
    throw Error("revision " + w.revision + " not found in " + w.repo + " (" + status + ")" + detail +
                ": check the branch, tag or commit name");
  }
  if (code == "EntryNotFound" || r.status == 404) {
    throw Error("file " + w.filename + " not found in " + w.repo + " at revision " + w.revision + " (" +
                status + ")" + detail + ": run `./dllm pull " + w.repo +
                "` to pick again from the files it has now");
  }
  if (code == "GatedRepo" || r.status == 401 || r.status == 403) {
    if (o.token.empty()) {
      throw Error(w.repo + " needs authorization (" + status + ", gated or private)" + detail +
                  ": accept its licence on " + page +
                  " while logged in, then set HF_TOKEN to an access token (" + o.endpoint +
                  "/settings/tokens) and run again");
    }
    throw Error(w.repo + " refused the HF_TOKEN that was sent (" + status + ")" + detail +
                ": check that the token is valid and can read this repo, and accept the licence on " + page);
  }
  if (r.status == 429) {
    throw Error(o.endpoint + " is rate-limiting requests (" + status + ") while fetching " + w.repo +
                ": wait a few minutes and run again" +
                (o.token.empty() ? " (setting HF_TOKEN raises the limit)" : ""));
  }
  if (r.status >= 500) {
    throw Error("the hub at " + r.host + " failed with " + status + " while fetching " + w.repo +
                (w.filename.empty() ? "" : "/" + w.filename) + detail +
                ": a server-side problem; try again in a few minutes" + resume_hint(w));
  }
  throw Error("unexpected " + status + " from " + r.host + " while fetching " + w.repo +
              (w.filename.empty() ? "" : "/" + w.filename) + detail + ": check HF_ENDPOINT (now " +
              o.endpoint + ")");
}

void check_reply(const HttpReply& r, const HubOptions& o, const What& w) {
  if (r.curl_code != CURLE_OK) throw_network(r, o, w);
  if (r.status < 200 || r.status >= 300) throw_status(r, o, w);
}

HttpRequest base_request(const HubOptions& o, const std::string& url) {
  HttpRequest req;
  req.url = url;
  req.token = o.token;
  req.connect_timeout_s = o.connect_timeout_s;
  req.stall_timeout_s = o.stall_timeout_s;
  return req;
}

// GET /api/models/{repo}/revision/{revision}?blobs=true (huggingface_hub hf_api.model_info).
RepoInfo fetch_info(const ModelRef& ref, const HubOptions& o) {
  std::string url = o.endpoint + "/api/models/" + url_path_escape(ref.repo) + "/revision/" +
                    url_path_escape(o.revision) + "?blobs=true";
  What w{ref.repo, "", o.revision, ref.spec, ""};
  HttpRequest req = base_request(o, url);
  req.max_body_bytes = kMaxModelInfoBytes;
  HttpReply r = http_get(req);
  if (r.body_too_large) {
    throw Error("unexpected answer from " + url + " (more than " + std::to_string(kMaxModelInfoBytes >> 20) +
                " MiB): is HF_ENDPOINT (now " + o.endpoint + ") a Hugging Face hub?");
  }
  check_reply(r, o, w);
  RepoInfo info;
  try {
    info = parse_model_info(r.body);
  } catch (const Error& e) {
    throw Error("unexpected answer from " + url + " (" + e.what() + "): is HF_ENDPOINT (now " + o.endpoint +
                ") a Hugging Face hub?");
  }
  if (info.commit.empty()) info.commit = r.last_header("x-repo-commit");
  if (info.commit.empty()) {
    throw Error("the hub gave no commit for " + ref.repo + " at " + o.revision + " (" + url +
                "): is HF_ENDPOINT (now " + o.endpoint + ") a Hugging Face hub?");
  }
  return info;
}

std::string resolve_url(const HubOptions& o, const RepoFile& f) {
  return o.endpoint + "/" + url_path_escape(f.repo) + "/resolve/" + url_path_escape(f.commit) + "/" +
         url_path_escape(f.filename);
}

// The remote file `ref` names: model info, choose_gguf, and the sha256/size the hub publishes.
RepoFile remote_file(const ModelRef& ref, const HubOptions& o) {
  RepoFile f = pick_file(ref.repo, ref.quant, fetch_info(ref, o));
  if (!is_sha256_hex(f.sha256) || f.size_bytes == 0) {
    // Model info without LFS data (an older mirror): ask the resolve endpoint, as huggingface_hub's
    // get_hf_file_metadata does, without following the redirect.
    HttpRequest req = base_request(o, resolve_url(o, f));
    req.head = true;
    req.follow_redirects = false;
    HttpReply r = http_get(req);
    What w{f.repo, f.filename, o.revision, ref.spec, ""};
    if (r.curl_code != CURLE_OK) throw_network(r, o, w);
    if (r.status >= 400) throw_status(r, o, w);
    std::string etag = strip_etag(r.header("x-linked-etag"));
    if (etag.empty()) etag = strip_etag(r.header("etag"));
    if (is_sha256_hex(etag)) f.sha256 = lower(etag);
    std::string size = r.header("x-linked-size");
    if (size.empty()) size = r.header("content-length");
    if (f.size_bytes == 0 && !size.empty()) f.size_bytes = std::strtoull(size.c_str(), nullptr, 10);
  }
  // Names from the hub become paths in the cache: refuse anything that could leave it.
  check_cache_names(f, o.endpoint);
  if (!is_sha256_hex(f.sha256)) {
    throw Error(
        "the hub publishes no sha256 for " + f.repo + "/" + f.filename +
        " (not an LFS file), so dllm cannot verify it: download it yourself and pass the path with --model");
  }
  if (f.size_bytes == 0) {
    throw Error("the hub gives no size for " + f.repo + "/" + f.filename +
                ": download it yourself and pass the path with --model");
  }
  return f;
}

void check_disk_space(const fs::path& dir, uint64_t need_bytes) {
  struct statvfs st;
  if (::statvfs(dir.c_str(), &st) != 0) return;
  uint64_t free_bytes = uint64_t(st.f_bavail) * st.f_frsize;
  if (free_bytes < need_bytes) {
    throw Error("not enough disk space in " + dir.string() + ": the download needs " +
                human_bytes(need_bytes) + " more, " + human_bytes(free_bytes) +
                " is free; free some space or point HF_HUB_CACHE elsewhere");
  }
}

enum class Attempt { kDone, kRetry };

// Downloads f into blobs/<sha>: .incomplete first (resumed with Range when present), sha256 checked,
// then renamed. Holds the .locks flock so two processes never write the same .incomplete.
void download_blob(const RepoFile& f, const fs::path& repo_dir, const HubOptions& o,
                   const std::string& spec) {
  fs::path blobs = repo_dir / "blobs";
  std::error_code ec;
  fs::create_directories(blobs, ec);
  if (ec)
    throw Error("cannot create " + blobs.string() + ": " + ec.message() + " (check HF_HUB_CACHE / HF_HOME)");
  fs::path blob = blobs / f.sha256;
  fs::path part = blob.string() + ".incomplete";
  FileLock lock(o.cache_dir / ".locks" / repo_folder_name(f.repo) / (f.sha256 + ".lock"), [&] {
    say(o, "waiting for another dllm process that is downloading " + f.repo + "/" + f.filename);
  });
  if (fs::exists(blob, ec)) return;  // the other process finished it

  const std::string url = resolve_url(o, f);
  What w{f.repo, f.filename, o.revision, spec, part.string()};
  say(o, "downloading " + f.repo + "/" + f.filename + " (" + human_bytes(f.size_bytes) + ") from " +
             url_host(o.endpoint));
  std::string digest;
  for (int attempt = 1;; ++attempt) {
    uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    if (ec || have > f.size_bytes) {
      fs::remove(part, ec);
      have = 0;
    }
    Sha256 hasher;
    if (have > 0) {
      say(o, "resuming " + f.filename + " at " + human_bytes(have) + " of " + human_bytes(f.size_bytes));
      have = sha256_update_from_file(hasher, part, have);
    }
    Attempt outcome = Attempt::kDone;
    if (have < f.size_bytes) {
      check_disk_space(blobs, f.size_bytes - have);
      FILE* out = std::fopen(part.c_str(), "ab");
      if (!out) throw Error("cannot write " + part.string() + ": " + std::strerror(errno));
      ProgressBar bar(o.progress, f.filename, f.size_bytes, have);
      uint64_t written = have;
      bool started = false;
      std::string sink_error;
      HttpRequest req = base_request(o, url);
      req.range_from = have;
      req.sink = [&](long status, const Headers& h, const char* data, size_t n) {
        if (!started) {
          started = true;
          if (status == 206) {
            // Content-Range: bytes <first>-<last>/<total>; we asked for <have>-.
            std::string cr = h.count("content-range") ? h.at("content-range") : "";
            size_t sp = cr.find(' ');
            uint64_t first =
                sp == std::string::npos ? UINT64_MAX : std::strtoull(cr.c_str() + sp + 1, nullptr, 10);
            if (first != written) {
              sink_error = "the server answered the resume request with the range '" + cr + "' instead of " +
                           std::to_string(written) + "-";
              return false;
            }
          } else if (written > 0) {
            // 200 to a Range request: the server sends the whole file; start over.
            if (::ftruncate(::fileno(out), 0) != 0) {
              sink_error = std::string("cannot truncate ") + part.string() + ": " + std::strerror(errno);
              return false;
            }
            hasher.reset();
            written = 0;
          }
        }
        if (written + n > f.size_bytes) {
          sink_error =
              "the server sent more than the " + std::to_string(f.size_bytes) + " bytes the hub announced";
          return false;
        }
        if (std::fwrite(data, 1, n, out) != n) {
          sink_error = "cannot write " + part.string() + ": " + std::strerror(errno) + " (disk full?)";
          return false;
        }
        hasher.update(data, n);
        written += n;
        bar.update(written);
        return true;
      };
      HttpReply r = http_get(req);
      bool flushed = std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
      std::fclose(out);
      if (started) bar.finish();
      // Keep a partial file only when it holds bytes; say so in errors only then.
      uint64_t kept = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
      if (kept == 0) fs::remove(part, ec);
      w.partial = kept > 0 ? part.string() : "";
      if (!sink_error.empty()) {
        if (sink_error.rfind("cannot", 0) == 0) throw Error(sink_error);
        fs::remove(part, ec);
        throw Error("download of " + f.repo + "/" + f.filename + " from " + r.host +
                    " failed: " + sink_error + "; the partial file was deleted, run the same command again");
      }
      if (!flushed)
        throw Error("cannot write " + part.string() + ": " + std::strerror(errno) + " (disk full?)");
      // The hub's own hop names the content hash; if it moved since the model-info call, the commit changed.
      std::string linked = strip_etag(r.header("x-linked-etag"));
      if (is_sha256_hex(linked) && lower(linked) != f.sha256) {
        fs::remove(part, ec);
        throw Error(f.repo + "/" + f.filename + " changed on the hub during the download (sha256 " +
                    lower(linked) + " instead of " + f.sha256 + "): run the same command again");
      }
      if (r.curl_code == CURLE_OK && r.status == 416) {
        // Our partial file does not fit the server's file: start from zero.
        fs::remove(part, ec);
        outcome = Attempt::kRetry;
      } else if (r.curl_code == CURLE_OK && (r.status < 200 || r.status >= 300)) {
        throw_status(r, o, w);
      } else if (r.curl_code == CURLE_OK && written == f.size_bytes) {
        digest = hasher.hex_digest();
      } else {
        bool transient = r.curl_code == CURLE_OK || r.curl_code == CURLE_PARTIAL_FILE ||
                         r.curl_code == CURLE_RECV_ERROR || r.curl_code == CURLE_GOT_NOTHING ||
                         r.curl_code == CURLE_OPERATION_TIMEDOUT || r.curl_code == CURLE_SEND_ERROR;
        if (!transient || written == have) {
          // No progress at all (or not a drop): report now rather than hammering the server.
          if (r.curl_code == CURLE_OK) {
            r.curl_code = CURLE_PARTIAL_FILE;
            r.curl_error = "the server closed the connection early";
          }
          throw_network(r, o, w);
        }
        if (attempt >= o.max_attempts) {
          if (r.curl_code == CURLE_OK) {
            r.curl_code = CURLE_PARTIAL_FILE;
            r.curl_error = "the server closed the connection early";
          }
          throw_network(r, o, w);
        }
        say(o, "the connection dropped at " + human_bytes(written) + " of " + human_bytes(f.size_bytes) +
                   "; resuming (try " + std::to_string(attempt + 1) + " of " +
                   std::to_string(o.max_attempts) + ")");
        outcome = Attempt::kRetry;
      }
    } else {
      digest = hasher.hex_digest();
    }
    if (outcome == Attempt::kRetry) {
      if (attempt >= o.max_attempts) {
        throw Error("download of " + f.repo + "/" + f.filename + " did not complete after " +
                    std::to_string(attempt) + " tries: run the same command again");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(o.retry_delay_ms));
      continue;
    }
    break;
  }
  if (digest != f.sha256) {
    fs::remove(part, ec);
    throw Error("the download of " + f.repo + "/" + f.filename + " is corrupt: its sha256 is " + digest +
                " but the hub publishes " + f.sha256 +
                "; the file was deleted, the next run downloads it again");
  }
  fs::rename(part, blob, ec);
  if (ec) throw Error("cannot rename " + part.string() + " to " + blob.string() + ": " + ec.message());
  VerifiedDb(o.verified_db).mark_verified(fs::canonical(blob, ec), f.sha256);
}

// Checks a cached blob against its name (the sha256), once per size+mtime (verified_db). On mismatch
// deletes the blob and `link` and returns false with the actual hash in *actual.
bool verify_blob(const fs::path& blob, const std::string& sha256, const HubOptions& o,
                 const std::string& label, std::string* actual) {
  VerifiedDb db(o.verified_db);
  std::error_code ec;
  fs::path key = fs::canonical(blob, ec);
  if (ec) return false;
  if (db.is_verified(key, sha256)) return true;
  say(o, "verifying " + label + " (" + human_bytes(fs::file_size(key, ec)) + ", once)");
  std::string got = sha256_file(key);
  if (got == sha256) {
    db.mark_verified(key, sha256);
    return true;
  }
  *actual = got;
  db.forget(key);
  fs::remove(key, ec);
  return false;
}

// The cached file `ref` names, without network: refs/<revision> -> snapshot -> choose_gguf.
std::optional<ResolvedModel> find_in_cache(const ModelRef& ref, const HubOptions& o) {
  fs::path repo_dir = repo_cache_dir(o, ref.repo);
  auto commit = cached_commit(repo_dir, o.revision);
  if (!commit) return std::nullopt;
  std::vector<std::string> files = snapshot_files(repo_dir, *commit);
  std::string filename;
  try {
    filename = choose_gguf(ref.repo, files, ref.quant);
  } catch (const Error&) {
    return std::nullopt;  // nothing suitable cached: the hub decides
  }
  ResolvedModel m;
  m.path = (repo_dir / "snapshots" / *commit / filename).string();
  m.file.repo = ref.repo;
  m.file.filename = filename;
  m.file.commit = *commit;
  std::error_code ec;
  fs::path blob = fs::canonical(m.path, ec);
  if (ec) return std::nullopt;
  m.file.sha256 = blob.filename().string();
  m.file.size_bytes = fs::file_size(blob, ec);
  return m;
}

// verify_blob for a snapshot file, throwing the "deleted, next run downloads it again" error.
void verify_cached_or_throw(const ResolvedModel& m, const HubOptions& o, const std::string& spec) {
  if (!is_sha256_hex(m.file.sha256)) return;  // not an LFS blob: nothing published to check against
  std::string actual;
  std::error_code ec;
  fs::path blob = fs::canonical(m.path, ec);
  if (ec) throw Error("cannot read " + m.path + ": " + ec.message());
  if (verify_blob(blob, m.file.sha256, o, m.file.repo + "/" + m.file.filename, &actual)) return;
  fs::remove(m.path, ec);
  throw Error("the cached " + m.file.repo + "/" + m.file.filename + " is corrupt (sha256 " + actual +
              ", expected " + m.file.sha256 + "): it was deleted; the next run downloads it again" +
              (o.offline ? " (offline: run `" + pull_command(spec) + "` on a connected machine)" : ""));
}

[[noreturn]] void throw_offline_missing(const ModelRef& ref, const HubOptions& o) {
  throw Error(ref.spec + " is not in the Hugging Face cache (" + o.cache_dir.string() +
              ") and offline mode is on (--offline or HF_HUB_OFFLINE=1): on a connected machine run `" +
              pull_command(ref.spec) + "`, then copy its " + repo_folder_name(ref.repo) +
              " folder into this cache, or drop --offline / HF_HUB_OFFLINE");
}

ModelRef parse_repo_spec(const std::string& spec, const char* command) {
  ModelRef ref = parse_model_ref(spec);
  if (!ref.is_repo()) {
    throw UsageError(std::string(command) + " takes a Hugging Face repo (org/repo or org/repo:QUANT); '" +
                     spec + "' is a local path");
  }
  return ref;
}

}  // namespace

HubOptions HubOptions::from_env() {
  HubOptions o;
  std::string endpoint = env("HF_ENDPOINT");
  if (!endpoint.empty()) o.endpoint = endpoint;
  while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
  std::string home = env("HOME");
  fs::path hf_home = !env("HF_HOME").empty()          ? fs::path(env("HF_HOME"))
                     : !env("XDG_CACHE_HOME").empty() ? fs::path(env("XDG_CACHE_HOME")) / "huggingface"
                                                      : fs::path(home) / ".cache" / "huggingface";
  o.cache_dir = !env("HF_HUB_CACHE").empty() ? fs::path(env("HF_HUB_CACHE")) : hf_home / "hub";
  o.token = env("HF_TOKEN");
  if (o.token.empty()) {
    fs::path token_path = !env("HF_TOKEN_PATH").empty() ? fs::path(env("HF_TOKEN_PATH")) : hf_home / "token";
    o.token = read_first_line(token_path);
  }
  o.offline = env_true("HF_HUB_OFFLINE");
  fs::path xdg = !env("XDG_CACHE_HOME").empty() ? fs::path(env("XDG_CACHE_HOME")) : fs::path(home) / ".cache";
  o.verified_db = xdg / "dllm" / "verified.json";
  o.progress = ::isatty(STDERR_FILENO) == 1;
  return o;
}

fs::path repo_cache_dir(const HubOptions& opts, const std::string& repo) {
  return opts.cache_dir / repo_folder_name(repo);
}

std::string pull_command(const std::string& spec) {
  return "./dllm pull " + spec;
}

std::string resolve_model(const std::string& spec, const HubOptions& opts) {
  ModelRef ref = parse_model_ref(spec);
  if (ref.is_path()) {
    std::string path = ref.path;
    if (path.rfind("~/", 0) == 0 && !env("HOME").empty()) path = env("HOME") + path.substr(1);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      throw Error("model file not found: " + path +
                  " (give an existing GGUF path, or a Hugging Face repo as org/repo or org/repo:QUANT)");
    }
    if (fs::is_directory(path, ec))
      throw Error(path + " is a folder, not a GGUF file: pass the .gguf file inside it");
    return path;
  }
  if (auto cached = find_in_cache(ref, opts)) {
    verify_cached_or_throw(*cached, opts, spec);
    return cached->path;
  }
  if (opts.offline) throw_offline_missing(ref, opts);
  return pull(spec, opts).path;
}

ResolvedModel pull(const std::string& spec, const HubOptions& opts) {
  ModelRef ref = parse_repo_spec(spec, "pull");
  if (opts.offline) {
    auto cached = find_in_cache(ref, opts);
    if (!cached) throw_offline_missing(ref, opts);
    verify_cached_or_throw(*cached, opts, spec);
    return *cached;
  }
  RepoFile f;
  try {
    f = remote_file(ref, opts);
  } catch (const Unreachable& e) {
    auto cached = find_in_cache(ref, opts);
    if (!cached) throw;
    say(opts, std::string(e.what()) + "; using the cached copy");
    verify_cached_or_throw(*cached, opts, spec);
    return *cached;
  }
  fs::path repo_dir = repo_cache_dir(opts, f.repo);
  fs::path blob = repo_dir / "blobs" / f.sha256;
  ResolvedModel m;
  m.file = f;
  std::error_code ec;
  if (fs::exists(blob, ec)) {
    std::string actual;
    if (!verify_blob(blob, f.sha256, opts, f.repo + "/" + f.filename, &actual)) {
      say(opts, "the cached " + f.repo + "/" + f.filename + " was corrupt (sha256 " + actual +
                    "); deleted it, downloading again");
    }
  }
  if (!fs::exists(blob, ec)) {
    download_blob(f, repo_dir, opts, spec);
    m.downloaded = true;
  }
  m.path = link_snapshot(repo_dir, f.commit, f.filename, f.sha256).string();
  if (opts.revision != f.commit) {
    const fs::path ref = repo_dir / "refs" / opts.revision;
    fs::create_directories(ref.parent_path(), ec);
    write_file_atomic(ref.string(), f.commit, "the cache's ref");
  }
  return m;
}

RepoFile lookup_remote(const std::string& spec, const HubOptions& opts) {
  ModelRef ref = parse_repo_spec(spec, "lookup");
  if (opts.offline) {
    throw Error("cannot look up " + spec + " on the hub: offline mode is on (--offline or HF_HUB_OFFLINE=1)");
  }
  return remote_file(ref, opts);
}

std::optional<ResolvedModel> find_cached(const std::string& spec, const HubOptions& opts) {
  try {
    const ModelRef ref = parse_model_ref(spec);
    if (!ref.is_repo()) return std::nullopt;
    return find_in_cache(ref, opts);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<ResolvedModel> list_cache(const HubOptions& opts) {
  std::vector<ResolvedModel> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(opts.cache_dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    std::string repo = repo_from_folder_name(it->path().filename().string());
    if (repo.empty()) continue;
    fs::path snaps = it->path() / "snapshots";
    std::error_code ec2;
    for (auto s = fs::directory_iterator(snaps, ec2); !ec2 && s != fs::directory_iterator();
         s.increment(ec2)) {
      std::string commit = s->path().filename().string();
      for (const auto& file : snapshot_files(it->path(), commit)) {
        std::string l = lower(file);
        if (l.size() < 5 || l.compare(l.size() - 5, 5, ".gguf") != 0) continue;
        ResolvedModel m;
        m.path = (s->path() / file).string();
        m.file.repo = repo;
        m.file.filename = file;
        m.file.commit = commit;
        std::error_code ec3;
        fs::path blob = fs::canonical(m.path, ec3);
        if (ec3) continue;
        m.file.sha256 = blob.filename().string();
        m.file.size_bytes = fs::file_size(blob, ec3);
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

}  // namespace dllm::hub
