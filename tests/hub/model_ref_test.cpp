// Model spec parsing and the GGUF choice rules, checked against the rules as issue 6 states them
// (Q4_K_M, then Q8_0, then the first .gguf; quant that matches nothing lists the files; split files
// are refused with a clear error). Expected picks are worked out by hand from those rules.
#include "hub/model_ref.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/error.h"
#include "test_util.h"

using dllm::hub::choose_gguf;
using dllm::hub::is_split_gguf;
using dllm::hub::ModelRef;
using dllm::hub::parse_model_ref;
using dllm::hub::quant_matches;
using ::testing::HasSubstr;

namespace {

std::string error_of(const std::vector<std::string>& files, const std::string& quant) {
  try {
    choose_gguf("org/repo", files, quant);
  } catch (const dllm::Error& e) {
    EXPECT_EQ(e.exit_code(), dllm::kExitFailure);
    return e.what();
  }
  ADD_FAILURE() << "no error for quant '" << quant << "'";
  return "";
}

}  // namespace

TEST(ModelRef, RepoAndRepoWithQuant) {
  ModelRef a = parse_model_ref("GSAI-ML/LLaDA-8B-Instruct");
  EXPECT_TRUE(a.is_repo());
  EXPECT_EQ(a.repo, "GSAI-ML/LLaDA-8B-Instruct");
  EXPECT_EQ(a.quant, "");
  ModelRef b = parse_model_ref("org/my.repo_v2:Q8_0");
  EXPECT_TRUE(b.is_repo());
  EXPECT_EQ(b.repo, "org/my.repo_v2");
  EXPECT_EQ(b.quant, "Q8_0");
  EXPECT_EQ(b.spec, "org/my.repo_v2:Q8_0");
}

TEST(ModelRef, PathsAreRecognised) {
  for (const char* p : {"/abs/model.gguf", "./m.gguf", "../shared/reference/x.gguf", "~/m.gguf", "model.gguf",
                        "some/dir/model.gguf", "org/repo.GGUF"}) {
    ModelRef r = parse_model_ref(p);
    EXPECT_TRUE(r.is_path()) << p;
    EXPECT_EQ(r.path, p);
  }
  // An existing file is a path even when it looks like org/repo.
  dllm::test::TempDir dir;
  std::filesystem::create_directories(dir / "org");
  std::ofstream(dir / "org" / "repo") << "x";
  std::string existing = (dir / "org" / "repo").string();
  EXPECT_TRUE(parse_model_ref(existing).is_path());
}

TEST(ModelRef, BadSpecsAreUsageErrors) {
  for (const char* s : {"", "justaword", "org/repo:", "org/repo:Q4 K", "a/b/c", "org/:Q4_K_M", "/"}) {
    if (std::string(s) == "/") continue;  // "/" exists (the root folder): a path, checked at resolve time
    try {
      parse_model_ref(s);
      ADD_FAILURE() << "accepted '" << s << "'";
    } catch (const dllm::UsageError& e) {
      EXPECT_EQ(e.exit_code(), dllm::kExitUsage);
      if (*s) {
        EXPECT_THAT(e.what(), HasSubstr("org/repo:QUANT")) << s;
      }
    }
  }
}

TEST(ModelRef, SplitNames) {
  EXPECT_TRUE(is_split_gguf("m-Q4_K_M-00001-of-00003.gguf"));
  EXPECT_TRUE(is_split_gguf("dir/m-Q8_0-00002-of-00002.gguf"));
  EXPECT_FALSE(is_split_gguf("m-Q4_K_M.gguf"));
  EXPECT_FALSE(is_split_gguf("m-00001-of-00003.bin"));
  EXPECT_FALSE(is_split_gguf("m-0001-of-0003.gguf"));
}

TEST(ModelRef, QuantIsAWholeTokenCaseInsensitive) {
  EXPECT_TRUE(quant_matches("m-Q4_K_M.gguf", "Q4_K_M"));
  EXPECT_TRUE(quant_matches("m.q4_k_m.gguf", "Q4_K_M"));
  EXPECT_TRUE(quant_matches("m-Q4_K_M.gguf", "q4_k_m"));
  EXPECT_TRUE(quant_matches("Q4_K_M/m-Q4_K_M-00001-of-00002.gguf", "Q4_K_M"));
  EXPECT_FALSE(quant_matches("m-Q4_K_M.gguf", "Q4_K"));     // followed by '_'
  EXPECT_FALSE(quant_matches("m-IQ4_K_M.gguf", "Q4_K_M"));  // preceded by 'I'
  EXPECT_FALSE(quant_matches("m-Q4_K_S.gguf", "Q4_K_M"));
  EXPECT_FALSE(quant_matches("m-Q4_K_M.gguf", ""));
}

TEST(ModelRef, DefaultPrefersQ4KMThenQ8_0ThenFirstGguf) {
  EXPECT_EQ(choose_gguf("o/r", {"README.md", "m-Q8_0.gguf", "m-Q4_K_M.gguf", "m-F16.gguf"}, ""),
            "m-Q4_K_M.gguf");
  EXPECT_EQ(choose_gguf("o/r", {"m-F16.gguf", "m-Q8_0.gguf", "m-Q5_K_M.gguf"}, ""), "m-Q8_0.gguf");
  EXPECT_EQ(choose_gguf("o/r", {"config.json", "m-Q5_K_M.gguf", "m-F16.gguf"}, ""), "m-Q5_K_M.gguf");
  // A split Q4_K_M is passed over for a one-file Q8_0.
  EXPECT_EQ(
      choose_gguf("o/r", {"m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf", "m-Q8_0.gguf"}, ""),
      "m-Q8_0.gguf");
}

TEST(ModelRef, ExplicitQuant) {
  std::vector<std::string> files = {"m-Q8_0.gguf", "m-Q4_K_M.gguf", "m-Q5_K_M.gguf", "sub/m-Q6_K.gguf"};
  EXPECT_EQ(choose_gguf("o/r", files, "Q5_K_M"), "m-Q5_K_M.gguf");
  EXPECT_EQ(choose_gguf("o/r", files, "q6_k"), "sub/m-Q6_K.gguf");
  EXPECT_EQ(choose_gguf("o/r", files, "Q8_0"), "m-Q8_0.gguf");
}

TEST(ModelRef, QuantMatchingNothingListsTheFiles) {
  std::string msg = error_of({"README.md", "m-Q8_0.gguf", "m-Q4_K_M.gguf"}, "IQ2_XS");
  EXPECT_THAT(msg, HasSubstr("IQ2_XS"));
  EXPECT_THAT(msg, HasSubstr("m-Q8_0.gguf"));
  EXPECT_THAT(msg, HasSubstr("m-Q4_K_M.gguf"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("README.md")));
}

TEST(ModelRef, NoGgufAtAll) {
  std::string msg = error_of({"config.json", "model.safetensors"}, "");
  EXPECT_THAT(msg, HasSubstr("no .gguf file"));
  EXPECT_THAT(msg, HasSubstr("model.safetensors"));
}

TEST(ModelRef, SplitFilesGiveAClearError) {
  std::vector<std::string> files = {"m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf",
                                    "m-Q8_0.gguf"};
  std::string msg = error_of(files, "Q4_K_M");
  EXPECT_THAT(msg, HasSubstr("split GGUF"));
  EXPECT_THAT(msg, HasSubstr("llama-gguf-split --merge"));
  EXPECT_THAT(msg, HasSubstr("m-Q8_0.gguf"));  // the one-file alternative
  // Only split files, no quant asked.
  std::string only = error_of({"m-Q4_K_M-00001-of-00002.gguf", "m-Q4_K_M-00002-of-00002.gguf"}, "");
  EXPECT_THAT(only, HasSubstr("split GGUF"));
}
