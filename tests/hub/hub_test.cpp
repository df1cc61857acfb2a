// The hub client against a real HTTP server on 127.0.0.1 (tests/hub/fake_hub.py, hub API shapes of
// huggingface_hub): download into the HF cache layout, cache reuse without network, resume after a
// dropped connection, corruption detected and removed, verified-once memo, offline mode, HTTP errors.
// Independent checks: file bytes are compared with the reference GGUF, hashes with coreutils
// `sha256sum` and the server's Python hashlib; the cache layout with huggingface_hub's documented one.
// The cache always lives in a TempDir: the real ~/.cache is never touched.
#include "hub/hub.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "base/error.h"
#include "fake_hub.h"
#include "hub/progress.h"
#include "test_util.h"

namespace fs = std::filesystem;
using dllm::hub::HubOptions;
using dllm::test::FakeHub;
using dllm::test::TempDir;
using nlohmann::json;
using ::testing::HasSubstr;

namespace {

const char* kTinyCommit = "1f2e3d4c5b6a79880123456789abcdef01234567";

// sha256 by coreutils, not by the code under test.
std::string sha256sum(const fs::path& p) {
  std::string cmd = "sha256sum '" + p.string() + "'";
  FILE* f = popen(cmd.c_str(), "r");
  char buf[65] = {0};
  size_t n = f ? fread(buf, 1, 64, f) : 0;
  if (f) pclose(f);
  return std::string(buf, n);
}

fs::path tiny_gguf() {
  return dllm::test::reference("tiny-llada-q4km.gguf");
}

json repos() {
  return {
      {"org/tiny",
       {{"commit", kTinyCommit},
        {"files",
         {{"README.md", {{"text", "# tiny\n"}, {"lfs", false}}},
          {"tiny-Q4_K_M.gguf", {{"path", tiny_gguf().string()}}},
          {"tiny-Q8_0.gguf", {{"synthetic", 4096}}}}}}},
      {"org/gated", {{"token", "hf_secret"}, {"files", {{"g-Q4_K_M.gguf", {{"synthetic", 10000}}}}}}},
      {"org/multi",
       {{"files",
         {{"m-Q8_0.gguf", {{"synthetic", 3000}}},
          {"m-Q4_K_M.gguf", {{"synthetic", 2000}}},
          {"m-Q5_K_M.gguf", {{"synthetic", 1000}}}}}}},
      {"org/q8",
       {{"files", {{"m-F16.gguf", {{"synthetic", 1500}}}, {"m-Q8_0.gguf", {{"synthetic", 1200}}}}}}},
      {"org/other",
       {{"files",
         {{"README.md", {{"text", "x"}, {"lfs", false}}},
          {"a-F16.gguf", {{"synthetic", 900}}},
          {"b-BF16.gguf", {{"synthetic", 800}}}}}}},
      {"org/plain", {{"no_blob_info", true}, {"files", {{"p-Q4_K_M.gguf", {{"synthetic", 7000}}}}}}},
      {"org/evil", {{"files", {{"../../../escape-Q4_K_M.gguf", {{"synthetic", 100}}}}}}},
      {"org/split",
       {{"files",
         {{"s-Q4_K_M-00001-of-00002.gguf", {{"synthetic", 500}}},
          {"s-Q4_K_M-00002-of-00002.gguf", {{"synthetic", 500}}}}}}},
  };
}

class Hub : public ::testing::Test {
 protected:
  // The server starts once the reference GGUF it serves is known to exist.
  void SetUp() override {
    DLLM_REQUIRE_REFERENCE();
    hub_.emplace(repos());
  }

  HubOptions opts() const {
    HubOptions o;
    o.endpoint = hub_->endpoint();
    o.cache_dir = dir_ / "hub";
    o.verified_db = dir_ / "dllm" / "verified.json";
    o.progress = false;
    o.connect_timeout_s = 5;
    o.stall_timeout_s = 5;
    o.max_attempts = 3;
    o.retry_delay_ms = 10;
    return o;
  }

  fs::path repo_dir(const std::string& name = "models--org--tiny") const { return dir_ / "hub" / name; }

  // The message of the dllm::Error that `f` throws (test failure when none).
  template <class F>
  std::string error_of(F&& f) {
    try {
      f();
    } catch (const dllm::Error& e) {
      EXPECT_EQ(e.exit_code(), dllm::kExitFailure) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no dllm::Error thrown";
    return "";
  }

  // Files under blobs/ (names only).
  std::vector<std::string> blob_names(const std::string& repo = "models--org--tiny") const {
    std::vector<std::string> out;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(repo_dir(repo) / "blobs", ec)) out.push_back(e.path().filename());
    return out;
  }

  TempDir dir_;
  std::optional<FakeHub> hub_;
};

TEST_F(Hub, DownloadCreatesTheHfCacheLayout) {
  std::string expected_sha = sha256sum(tiny_gguf());
  ASSERT_EQ(expected_sha.size(), 64u);
  std::string path = dllm::hub::resolve_model("org/tiny", opts());

  fs::path link = repo_dir() / "snapshots" / kTinyCommit / "tiny-Q4_K_M.gguf";
  EXPECT_EQ(fs::path(path), link);
  ASSERT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link), fs::path("../../blobs/" + expected_sha));
  fs::path blob = repo_dir() / "blobs" / expected_sha;
  ASSERT_TRUE(fs::is_regular_file(blob));
  EXPECT_TRUE(dllm::test::read_file(blob) == dllm::test::read_file(tiny_gguf())) << "bytes differ";
  EXPECT_EQ(blob_names(), std::vector<std::string>{expected_sha})
      << "nothing else (no .incomplete) in blobs/";
  std::ifstream ref(repo_dir() / "refs" / "main");
  std::string commit((std::istreambuf_iterator<char>(ref)), std::istreambuf_iterator<char>());
  EXPECT_EQ(commit, kTinyCommit);

  // The API call asked for blob data, the resolve redirected to the CDN, one full GET of the bytes.
  auto api = hub_->requests_to("/api/models/org/tiny/revision/main");
  ASSERT_EQ(api.size(), 1u);
  EXPECT_THAT(api[0]["path"].get<std::string>(), HasSubstr("blobs=true"));
  EXPECT_EQ(hub_->requests_to("/org/tiny/resolve/" + std::string(kTinyCommit) + "/tiny-Q4_K_M.gguf").size(),
            1u);
  auto cdn = hub_->requests_to("/cdn/" + expected_sha);
  ASSERT_EQ(cdn.size(), 1u);
  EXPECT_TRUE(cdn[0]["range"].is_null());

  // The verified-once memo holds the blob with its size.
  std::ifstream db(dir_ / "dllm" / "verified.json");
  json j = json::parse(db);
  auto e = j["files"][fs::canonical(blob).string()];
  EXPECT_EQ(e["sha256"], expected_sha);
  EXPECT_EQ(e["size"].get<uint64_t>(), fs::file_size(tiny_gguf()));
}

TEST_F(Hub, SecondResolveUsesTheCacheWithoutNetwork) {
  std::string first = dllm::hub::resolve_model("org/tiny", opts());
  size_t n_requests = hub_->requests().size();
  hub_->stop();  // any request now fails with "connection refused"
  EXPECT_EQ(dllm::hub::resolve_model("org/tiny", opts()), first);
  EXPECT_EQ(dllm::hub::resolve_model("org/tiny:Q4_K_M", opts()), first);
  EXPECT_EQ(hub_->requests().size(), n_requests);
  // pull asks the hub first; unreachable, it falls back to the cached copy and says so.
  std::vector<std::string> messages;
  HubOptions o = opts();
  o.on_message = [&](const std::string& m) { messages.push_back(m); };
  auto pulled = dllm::hub::pull("org/tiny", o);
  EXPECT_EQ(pulled.path, first);
  EXPECT_FALSE(pulled.downloaded);
  EXPECT_THAT(::testing::PrintToString(messages), HasSubstr("using the cached copy"));
  // Nothing cached for that quant: the connection error itself.
  EXPECT_THAT(error_of([&] { dllm::hub::pull("org/tiny:Q8_0", o); }), HasSubstr("cannot connect"));
}

TEST_F(Hub, ResumesAfterACutConnection) {
  const uint64_t cut = 5'000'000;
  hub_->set_faults(json::array({{{"id", "cut1"}, {"where", "cdn"}, {"times", 1}, {"cut_after", cut}}}));
  std::vector<std::string> messages;
  HubOptions o = opts();
  o.on_message = [&](const std::string& m) { messages.push_back(m); };
  std::string path = dllm::hub::resolve_model("org/tiny", o);
  EXPECT_TRUE(dllm::test::read_file(path) == dllm::test::read_file(tiny_gguf()));
  auto cdn = hub_->requests_to("/cdn/");
  ASSERT_EQ(cdn.size(), 2u);
  EXPECT_TRUE(cdn[0]["range"].is_null());
  EXPECT_EQ(cdn[1]["range"], "bytes=" + std::to_string(cut) + "-");
  EXPECT_THAT(::testing::PrintToString(messages), HasSubstr("resuming"));
  EXPECT_EQ(blob_names().size(), 1u);
}

TEST_F(Hub, ADroppedDownloadKeepsOnlyTheIncompleteFileAndTheNextRunResumes) {
  const uint64_t cut = 3'000'000;
  hub_->set_faults(json::array({{{"id", "cut"}, {"where", "cdn"}, {"times", 1}, {"cut_after", cut}}}));
  HubOptions o = opts();
  o.max_attempts = 1;
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", o); });
  EXPECT_THAT(msg, HasSubstr("dropped"));
  EXPECT_THAT(msg, HasSubstr("run the same command again"));
  // Only blobs/<sha>.incomplete: no blob, no snapshot link, no ref a later run would trust.
  std::string sha = sha256sum(tiny_gguf());
  EXPECT_EQ(blob_names(), std::vector<std::string>{sha + ".incomplete"});
  EXPECT_EQ(fs::file_size(repo_dir() / "blobs" / (sha + ".incomplete")), cut);
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots"));
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));

  std::string path = dllm::hub::resolve_model("org/tiny", o);
  EXPECT_TRUE(dllm::test::read_file(path) == dllm::test::read_file(tiny_gguf()));
  auto cdn = hub_->requests_to("/cdn/");
  ASSERT_EQ(cdn.size(), 2u);
  EXPECT_EQ(cdn[1]["range"], "bytes=" + std::to_string(cut) + "-");
}

TEST_F(Hub, CorruptDownloadIsDetectedAndRemoved) {
  hub_->set_faults(json::array({{{"id", "bad"}, {"where", "cdn"}, {"times", 1}, {"corrupt_at", 1234567}}}));
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(msg, HasSubstr("corrupt"));
  EXPECT_THAT(msg, HasSubstr(sha256sum(tiny_gguf())));  // the hash the hub publishes
  EXPECT_THAT(msg, HasSubstr("the next run downloads it again"));
  EXPECT_TRUE(blob_names().empty()) << ::testing::PrintToString(blob_names());
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots"));
  // The next run (the server is healthy again) downloads it.
  std::string path = dllm::hub::resolve_model("org/tiny", opts());
  EXPECT_TRUE(dllm::test::read_file(path) == dllm::test::read_file(tiny_gguf()));
}

TEST_F(Hub, CorruptCachedFileIsDeletedAndDownloadedByTheNextRun) {
  std::string path = dllm::hub::resolve_model("org/tiny", opts());
  fs::path blob = fs::canonical(path);
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(msg, HasSubstr("corrupt"));
  EXPECT_THAT(msg, HasSubstr("deleted"));
  EXPECT_THAT(msg, HasSubstr("the next run downloads it again"));
  EXPECT_FALSE(fs::exists(blob));
  EXPECT_FALSE(fs::exists(fs::symlink_status(path)));
  size_t cdn_before = hub_->requests_to("/cdn/").size();
  std::string again = dllm::hub::resolve_model("org/tiny", opts());
  EXPECT_EQ(again, path);
  EXPECT_TRUE(dllm::test::read_file(again) == dllm::test::read_file(tiny_gguf()));
  EXPECT_EQ(hub_->requests_to("/cdn/").size(), cdn_before + 1);
}

TEST_F(Hub, CachedFileIsVerifiedOnceKeyedBySizeAndMtime) {
  std::string path = dllm::hub::resolve_model("org/tiny", opts());
  fs::path blob = fs::canonical(path);
  struct stat st;
  ASSERT_EQ(stat(blob.c_str(), &st), 0);
  // Change one byte but restore the mtime: the memo still matches, so the file is not hashed again.
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);
    f.put('\x11');
  }
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, blob.c_str(), times, 0), 0);
  hub_->stop();
  EXPECT_EQ(dllm::hub::resolve_model("org/tiny", opts()), path);
  // A new mtime invalidates the memo: the damage is found.
  times[1].tv_sec += 10;
  ASSERT_EQ(utimensat(AT_FDCWD, blob.c_str(), times, 0), 0);
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(msg, HasSubstr("corrupt"));
}

TEST_F(Hub, OfflineUsesTheCacheAndNamesThePullCommandWhenMissing) {
  HubOptions off = opts();
  off.offline = true;
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny:Q4_K_M", off); });
  EXPECT_THAT(msg, HasSubstr("./dllm pull org/tiny:Q4_K_M"));
  EXPECT_THAT(msg, HasSubstr("offline"));
  EXPECT_TRUE(hub_->requests().empty()) << "offline sent a request";

  std::string path = dllm::hub::resolve_model("org/tiny", opts());
  hub_->stop();
  EXPECT_EQ(dllm::hub::resolve_model("org/tiny", off), path);
  EXPECT_EQ(dllm::hub::pull("org/tiny", off).path, path);
  // A quant that is not cached is missing offline even though another one is there.
  std::string q8 = error_of([&] { dllm::hub::resolve_model("org/tiny:Q8_0", off); });
  EXPECT_THAT(q8, HasSubstr("./dllm pull org/tiny:Q8_0"));
}

TEST_F(Hub, GatedRepoNeedsTheToken) {
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/gated", opts()); });
  EXPECT_THAT(msg, HasSubstr("HTTP 401"));
  EXPECT_THAT(msg, HasSubstr("HF_TOKEN"));
  EXPECT_THAT(msg, HasSubstr("licence"));
  EXPECT_THAT(msg, HasSubstr(hub_->endpoint() + "/org/gated"));

  HubOptions wrong = opts();
  wrong.token = "hf_wrong";
  EXPECT_THAT(error_of([&] { dllm::hub::resolve_model("org/gated", wrong); }),
              HasSubstr("refused the HF_TOKEN"));

  HubOptions with = opts();
  with.token = "hf_secret";
  std::string path = dllm::hub::resolve_model("org/gated", with);
  EXPECT_EQ(fs::file_size(path), 10000u);
  auto api = hub_->requests_to("/api/models/org/gated/");
  ASSERT_FALSE(api.empty());
  EXPECT_EQ(api.back()["authorization"], "Bearer hf_secret");
}

TEST_F(Hub, NotFoundNamesTheRepoOrFile) {
  std::string repo = error_of([&] { dllm::hub::resolve_model("org/nope", opts()); });
  EXPECT_THAT(repo, HasSubstr("repository org/nope not found"));
  EXPECT_THAT(repo, HasSubstr("HTTP 404"));

  hub_->set_faults(json::array(
      {{{"where", "resolve"}, {"status", 404}, {"error_code", "EntryNotFound"}, {"message", "gone"}}}));
  std::string file = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(file, HasSubstr("file tiny-Q4_K_M.gguf not found in org/tiny"));
}

TEST_F(Hub, ServerErrorSaysTryAgainLater) {
  hub_->set_faults(json::array({{{"where", "api"}, {"status", 500}}}));
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(msg, HasSubstr("HTTP 500"));
  EXPECT_THAT(msg, HasSubstr("try again"));

  hub_->set_faults(json::array({{{"where", "cdn"}, {"status", 503}}}));
  std::string cdn = error_of([&] { dllm::hub::resolve_model("org/tiny", opts()); });
  EXPECT_THAT(cdn, HasSubstr("HTTP 503"));
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots"));
  EXPECT_TRUE(blob_names().empty()) << "an empty .incomplete was left: "
                                    << ::testing::PrintToString(blob_names());
}

TEST_F(Hub, ConnectionRefusedSuggestsOffline) {
  // A port nobody listens on: bind one, read its number, close it.
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  HubOptions o = opts();
  o.endpoint = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", o); });
  EXPECT_THAT(msg, HasSubstr("cannot connect"));
  EXPECT_THAT(msg, HasSubstr("--offline"));
}

TEST_F(Hub, StalledServerTimesOut) {
  hub_->set_faults(json::array({{{"where", "cdn"}, {"stall_after", 100000}, {"stall_s", 8}}}));
  HubOptions o = opts();
  o.stall_timeout_s = 1;
  o.max_attempts = 1;
  auto t0 = std::chrono::steady_clock::now();
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/tiny", o); });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_THAT(msg, HasSubstr("timeout"));
  EXPECT_THAT(msg, HasSubstr("resumed by the next run"));
  EXPECT_LT(secs, 6.0);

  // A server that accepts the connection but never answers the model-info request.
  hub_->set_faults(json::array({{{"where", "api"}, {"stall_s", 8}}}));
  t0 = std::chrono::steady_clock::now();
  std::string api = error_of([&] { dllm::hub::resolve_model("org/tiny", o); });
  secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_THAT(api, HasSubstr("timeout"));
  EXPECT_THAT(api, HasSubstr("looking up org/tiny"));
  EXPECT_LT(secs, 6.0);
}

TEST_F(Hub, QuantSelectionRules) {
  auto name_of = [&](const std::string& spec) {
    return fs::path(dllm::hub::resolve_model(spec, opts())).filename();
  };
  EXPECT_EQ(name_of("org/multi"), "m-Q4_K_M.gguf");
  EXPECT_EQ(name_of("org/multi:q5_k_m"), "m-Q5_K_M.gguf");
  EXPECT_EQ(name_of("org/q8"), "m-Q8_0.gguf");
  EXPECT_EQ(name_of("org/other"), "a-F16.gguf");  // the first .gguf listed (the server lists in key order)
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/multi:IQ2_XS", opts()); });
  EXPECT_THAT(msg, HasSubstr("IQ2_XS"));
  EXPECT_THAT(msg, HasSubstr("m-Q8_0.gguf"));
  EXPECT_THAT(msg, HasSubstr("m-Q5_K_M.gguf"));
  // Each download is byte-exact: its name is the sha256 coreutils computes.
  for (auto& b : blob_names("models--org--multi"))
    EXPECT_EQ(sha256sum(repo_dir("models--org--multi") / "blobs" / b), b);
}

TEST_F(Hub, SplitFilesGiveAClearError) {
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/split", opts()); });
  EXPECT_THAT(msg, HasSubstr("split GGUF"));
  EXPECT_THAT(msg, HasSubstr("llama-gguf-split --merge"));
  EXPECT_TRUE(hub_->requests_to("/cdn/").empty());
}

TEST_F(Hub, WithoutBlobInfoTheResolveHeadersGiveShaAndSize) {
  // Model info without lfs/size (an older mirror): the client reads X-Linked-Etag / X-Linked-Size from a
  // HEAD of the resolve URL, as huggingface_hub's get_hf_file_metadata does.
  std::string path = dllm::hub::resolve_model("org/plain", opts());
  EXPECT_EQ(fs::file_size(path), 7000u);
  EXPECT_EQ(sha256sum(path), fs::canonical(path).filename().string());
  bool head_seen = false;
  for (auto& r : hub_->requests_to("/org/plain/resolve/")) head_seen = head_seen || r["method"] == "HEAD";
  EXPECT_TRUE(head_seen);
}

TEST_F(Hub, ConcurrentResolvesDownloadOnce) {
  // Two callers at once (flock on .locks/<repo>/<sha>.lock serializes them; the second finds the blob).
  std::string a, b, err_a, err_b;
  auto run = [&](std::string* out, std::string* err) {
    try {
      *out = dllm::hub::resolve_model("org/tiny", opts());
    } catch (const std::exception& e) {
      *err = e.what();
    }
  };
  std::thread t1(run, &a, &err_a), t2(run, &b, &err_b);
  t1.join();
  t2.join();
  EXPECT_EQ(err_a, "");
  EXPECT_EQ(err_b, "");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(dllm::test::read_file(a) == dllm::test::read_file(tiny_gguf()));
  EXPECT_EQ(hub_->requests_to("/cdn/").size(), 1u);
  EXPECT_EQ(blob_names().size(), 1u);
}

TEST_F(Hub, FileNamesThatLeaveTheCacheAreRefused) {
  std::string msg = error_of([&] { dllm::hub::resolve_model("org/evil", opts()); });
  EXPECT_THAT(msg, HasSubstr("unusable file name"));
  EXPECT_TRUE(hub_->requests_to("/cdn/").empty());
  EXPECT_FALSE(fs::exists(dir_ / "escape-Q4_K_M.gguf"));
}

TEST_F(Hub, BrokenOrHostileModelInfoIsAClearError) {
  hub_->set_faults(json::array({{{"where", "api"}, {"body", "<html>not json"}}}));
  EXPECT_THAT(error_of([&] { dllm::hub::lookup_remote("org/tiny", opts()); }),
              HasSubstr("unexpected answer from " + hub_->endpoint() +
                        "/api/models/org/tiny/revision/main?blobs=true"
                        " (not JSON): is HF_ENDPOINT"));
  // 65 MiB of listing: the client stops reading at 64 MiB instead of holding it all.
  hub_->set_faults(
      json::array({{{"where", "api"}, {"body", std::string(1 << 20, ' ')}, {"body_repeat", 65}}}));
  EXPECT_THAT(error_of([&] { dllm::hub::lookup_remote("org/tiny", opts()); }),
              HasSubstr("(more than 64 MiB): is HF_ENDPOINT"));
  // A name with a terminal escape and a way out of the cache: refused, and shown escaped.
  hub_->set_faults(json::array(
      {{{"where", "api"},
        {"body",
         json({{"sha", "a"},
               {"siblings", json::array({{{"rfilename", "../\x1b[2J/x-Q4_K_M.gguf"},
                                          {"size", 10},
                                          {"lfs", {{"sha256", std::string(64, 'a')}, {"size", 10}}}}})}})
             .dump()}}}));
  const std::string msg = error_of([&] { dllm::hub::lookup_remote("org/tiny", opts()); });
  EXPECT_THAT(msg, HasSubstr("unusable file name '../\\x1b[2J/x-Q4_K_M.gguf'"));
  EXPECT_EQ(msg.find('\x1b'), std::string::npos);
}

TEST_F(Hub, LookupRemoteAndListCache) {
  auto f = dllm::hub::lookup_remote("org/tiny", opts());
  EXPECT_EQ(f.filename, "tiny-Q4_K_M.gguf");
  EXPECT_EQ(f.size_bytes, fs::file_size(tiny_gguf()));
  EXPECT_EQ(f.sha256, sha256sum(tiny_gguf()));
  EXPECT_EQ(f.commit, kTinyCommit);
  EXPECT_TRUE(hub_->requests_to("/cdn/").empty()) << "lookup downloaded";
  EXPECT_TRUE(dllm::hub::list_cache(opts()).empty());

  auto m = dllm::hub::pull("org/tiny:Q8_0", opts());
  EXPECT_TRUE(m.downloaded);
  EXPECT_EQ(m.file.size_bytes, 4096u);
  EXPECT_FALSE(dllm::hub::pull("org/tiny:Q8_0", opts()).downloaded);
  auto cached = dllm::hub::list_cache(opts());
  ASSERT_EQ(cached.size(), 1u);
  EXPECT_EQ(cached[0].file.repo, "org/tiny");
  EXPECT_EQ(cached[0].file.filename, "tiny-Q8_0.gguf");
  EXPECT_EQ(cached[0].path, m.path);
  EXPECT_THROW(dllm::hub::pull("./local.gguf", opts()), dllm::UsageError);
}

TEST(HubLocal, PathsAreReturnedAsIsOrNamedWhenMissing) {
  DLLM_REQUIRE_REFERENCE();
  HubOptions o;
  o.cache_dir = "/nonexistent-dllm-cache";
  o.offline = true;
  EXPECT_EQ(dllm::hub::resolve_model(tiny_gguf().string(), o), tiny_gguf().string());
  try {
    dllm::hub::resolve_model("./no-such-model.gguf", o);
    ADD_FAILURE();
  } catch (const dllm::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("model file not found: ./no-such-model.gguf"));
  }
}

TEST(HubLocal, OptionsFromEnvironment) {
  TempDir d;
  setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
  setenv("HF_HOME", (d / "hfhome").c_str(), 1);
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_TOKEN");
  unsetenv("HF_TOKEN_PATH");
  setenv("HF_HUB_OFFLINE", "1", 1);
  setenv("XDG_CACHE_HOME", (d / "xdg").c_str(), 1);
  fs::create_directories(d / "hfhome");
  std::ofstream(d / "hfhome" / "token") << "hf_fromfile\n";
  HubOptions o = HubOptions::from_env();
  EXPECT_EQ(o.endpoint, "http://127.0.0.1:9");
  EXPECT_EQ(o.cache_dir, d / "hfhome" / "hub");
  EXPECT_EQ(o.token, "hf_fromfile");
  EXPECT_TRUE(o.offline);
  EXPECT_EQ(o.verified_db, d / "xdg" / "dllm" / "verified.json");
  setenv("HF_HUB_CACHE", (d / "c").c_str(), 1);
  setenv("HF_TOKEN", "hf_env", 1);
  setenv("HF_HUB_OFFLINE", "0", 1);
  o = HubOptions::from_env();
  EXPECT_EQ(o.cache_dir, d / "c");
  EXPECT_EQ(o.token, "hf_env");
  EXPECT_FALSE(o.offline);
  for (const char* v :
       {"HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE", "HF_TOKEN", "HF_HUB_OFFLINE", "XDG_CACHE_HOME"})
    unsetenv(v);
}

TEST(HubLocal, ProgressLineHasSizeRateAndEta) {
  std::string line = dllm::hub::ProgressBar::render("m.gguf", 512ull << 20, 1024ull << 20, 64.0 * (1 << 20));
  EXPECT_THAT(line, HasSubstr("m.gguf"));
  EXPECT_THAT(line, HasSubstr("50%"));
  EXPECT_THAT(line, HasSubstr("512.0 MiB / 1.00 GiB"));
  EXPECT_THAT(line, HasSubstr("64.0 MiB/s"));
  EXPECT_THAT(line, HasSubstr("ETA 0:08"));  // 512 MiB left at 64 MiB/s
}

}  // namespace
