// parse_model_info, pick_file and check_cache_names on hand-written answers: the hub's shape
// (huggingface_hub hf_api.model_info with blobs=true), and what a broken or hostile server may send.
#include "hub/model_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace dllm::hub {
namespace {

using ::testing::HasSubstr;

std::string error_of(std::string_view body) {
  try {
    (void)parse_model_info(body);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "parsed: " << body;
  return "";
}

TEST(ModelInfo, ParsesTheHubShape) {
  const RepoInfo info = parse_model_info(R"({"id": "o/r", "sha": "abc", "private": false, "siblings": [
      {"rfilename": "README.md", "size": 12, "blobId": "b"},
      {"rfilename": "m-Q4_K_M.gguf", "size": 134, "lfs": {"sha256": "ABCDEF", "size": 5000000000, "pointerSize": 134}}]})");
  EXPECT_EQ(info.commit, "abc");
  ASSERT_EQ(info.siblings.size(), 2u);
  EXPECT_EQ(info.siblings[0].name, "README.md");
  EXPECT_EQ(info.siblings[0].size_bytes, 12u);
  EXPECT_EQ(info.siblings[0].sha256, "");
  EXPECT_EQ(info.siblings[1].size_bytes, 5000000000u);  // lfs.size, not the pointer's
  EXPECT_EQ(info.siblings[1].sha256, "abcdef");
  EXPECT_EQ(parse_model_info(R"({"siblings": []})").commit, "");  // the caller falls back to X-Repo-Commit
}

TEST(ModelInfo, MalformedAnswersAreErrors) {
  EXPECT_EQ(error_of("<html>"), "not JSON");
  EXPECT_EQ(error_of(""), "not JSON");
  EXPECT_EQ(error_of(R"({"siblings": [)"), "not JSON");
  EXPECT_EQ(error_of("[1, 2]"), "not a JSON object");
  EXPECT_EQ(error_of(R"({"sha": "x"})"), "no \"siblings\" list");
  EXPECT_EQ(error_of(R"({"siblings": {"a": 1}})"), "\"siblings\" is not a list");
  EXPECT_EQ(error_of(R"({"sha": 5, "siblings": []})"), "\"sha\" is not a string");
  EXPECT_EQ(error_of(R"({"siblings": [{"rfilename": "a"}, 7]})"), "sibling 1 has no \"rfilename\" string");
  EXPECT_EQ(error_of(R"({"siblings": [{"rfilename": ["a"]}]})"), "sibling 0 has no \"rfilename\" string");
  EXPECT_THAT(error_of(std::string(kMaxModelInfoBytes + 1, ' ')), HasSubstr("more than the 64 MiB"));
}

TEST(ModelInfo, SizesThatAreNotWholeNumbersCountAsAbsent) {
  // 1e300 would overflow a conversion to uint64 (undefined behaviour); negative and text sizes
  // would wrap or throw. All become 0, and the client then asks the resolve endpoint.
  const RepoInfo info = parse_model_info(R"({"siblings": [
      {"rfilename": "a", "size": 1e300}, {"rfilename": "b", "size": -5}, {"rfilename": "c", "size": "12"},
      {"rfilename": "d", "size": 1.5}, {"rfilename": "e", "lfs": {"sha256": 7, "size": -1}},
      {"rfilename": "f", "lfs": "x", "size": 18446744073709551615}]})");
  ASSERT_EQ(info.siblings.size(), 6u);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(info.siblings[k].size_bytes, 0u) << info.siblings[k].name;
  EXPECT_EQ(info.siblings[4].sha256, "");
  EXPECT_EQ(info.siblings[5].size_bytes, 18446744073709551615u);
}

TEST(ModelInfo, PickFileTakesTheListedHashAndSize) {
  const RepoInfo info = parse_model_info(R"({"sha": "c", "siblings": [
      {"rfilename": "m-Q8_0.gguf", "size": 8}, {"rfilename": "m-Q4_K_M.gguf", "size": 4, "lfs": {"sha256": "AA", "size": 44}}]})");
  const RepoFile f = pick_file("o/r", "", info);
  EXPECT_EQ(f.repo, "o/r");
  EXPECT_EQ(f.filename, "m-Q4_K_M.gguf");
  EXPECT_EQ(f.commit, "c");
  EXPECT_EQ(f.sha256, "aa");
  EXPECT_EQ(f.size_bytes, 44u);
  EXPECT_EQ(pick_file("o/r", "q8_0", info).size_bytes, 8u);
  EXPECT_THROW(pick_file("o/r", "Q5_K_M", info), Error);
}

TEST(ModelInfo, NamesThatLeaveTheCacheAreRefusedAndEscaped) {
  RepoFile ok;
  ok.repo = "o/r";
  ok.filename = "sub/dir/m-Q4_K_M.gguf";
  ok.commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_NO_THROW(check_cache_names(ok, "http://h"));
  for (const std::string& bad :
       {std::string("../m.gguf"), std::string("/etc/m.gguf"), std::string("a/../../m.gguf"),
        std::string("a/./m.gguf"), std::string("a\\m.gguf"), std::string(""),
        std::string("m\0/../x.gguf", 12)}) {
    RepoFile f = ok;
    f.filename = bad;
    EXPECT_THROW(check_cache_names(f, "http://h"), Error) << bad;
  }
  for (const std::string& bad : {"", ".", "..", "a/b", "a\\b"}) {
    RepoFile f = ok;
    f.commit = bad;
    EXPECT_THROW(check_cache_names(f, "http://h"), Error) << bad;
  }
  RepoFile f = ok;
  f.filename = "../\x1b[2J\n.gguf";
  try {
    check_cache_names(f, "http://h");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("unusable file name '../\\x1b[2J\\n.gguf'"));
  }
}

}  // namespace
}  // namespace dllm::hub
