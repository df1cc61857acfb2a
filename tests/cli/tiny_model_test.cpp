// The committed demo model (models/tiny-llada-fairytales-q4km.gguf, trained by tools/train_tiny) run
// end to end through the binary. These check properties a trained mask predictor has and a model with
// random weights lacks, never an exact string: the greedy continuation of "Once upon a time" is made of
// words of the training corpus (tools/train_tiny/corpus_words.txt, written by wordlist.py from the
// corpus), whereas the random-weight reference file (../shared/reference/tiny-llada-q4km.gguf) strings
// together sub-word fragments and fails the same check.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "gguf/gguf.h"
#include "run_binary.h"

namespace dllm::test {
namespace {

/// The model file name the CLI falls back to (src/cli) and the model card (models/README.md) name.
constexpr const char* kModelRel = "models/tiny-llada-fairytales-q4km.gguf";

/// Share of corpus words a trained model's greedy text must reach and a random model's must not.
constexpr double kMinCorpusWordShare = 0.8;

std::string model_path() {
  return (std::filesystem::path(DLLM_SOURCE_DIR) / kModelRel).string();
}

std::unordered_set<std::string> corpus_words() {
  std::ifstream f(std::filesystem::path(DLLM_SOURCE_DIR) / "tools/train_tiny/corpus_words.txt");
  std::unordered_set<std::string> words;
  for (std::string w; std::getline(f, w);) {
    if (!w.empty()) words.insert(w);
  }
  return words;
}

/// Maximal runs of ASCII letters, lower-cased (the rule of tools/train_tiny/wordlist.py).
std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalpha(c) && c < 128) {
      cur += static_cast<char>(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

struct Generation {
  std::string text;
  std::vector<std::string> words;
  double corpus_share = 0;  ///< words found in corpus_words() / words
};

/// `dllm run --model M "Once upon a time" --max-tokens 32 --temperature 0 --json`. The demo model has
/// no chat template, so run feeds it the raw text by default; the reference file has LLaDA's template,
/// and `no_chat` makes it see the same raw text.
Generation generate(const std::string& model, const std::unordered_set<std::string>& vocab, bool no_chat) {
  std::vector<std::string> args = {"run", "--model",       model, "Once upon a time", "--max-tokens",
                                   "32",  "--temperature", "0",   "--json",           "--threads",
                                   "2"};
  if (no_chat) args.push_back("--no-chat");
  const RunResult r = run_dllm(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Generation g;
  if (r.exit_code != 0) return g;
  const auto j = nlohmann::json::parse(r.out);
  g.text = j.at("text").get<std::string>();
  g.words = split_words(g.text);
  size_t hits = 0;
  for (const auto& w : g.words) hits += vocab.count(w);
  g.corpus_share = g.words.empty() ? 0.0 : static_cast<double>(hits) / g.words.size();
  return g;
}

class TinyModel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(model_path())) GTEST_FAIL() << "missing " << model_path();
    vocab_ = corpus_words();
    ASSERT_GT(vocab_.size(), 1000u) << "tools/train_tiny/corpus_words.txt missing or short";
  }
  std::unordered_set<std::string> vocab_;
};

TEST_F(TinyModel, FileIsALladaQ4KMWithoutChatTemplate) {
  const gguf::GgufFile f = gguf::GgufFile::open(model_path());
  EXPECT_EQ(f.get_string("general.architecture"), "llada");
  EXPECT_FALSE(f.find("tokenizer.chat_template")) << "run must feed raw text to this model";
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_u32("general.file_type"), 15u);  // MOSTLY_Q4_K_M
  EXPECT_FALSE(f.get_bool("diffusion.shift_logits"));
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const uint32_t mask = f.get_u32("tokenizer.ggml.mask_token_id");
  ASSERT_LT(mask, tokens.size());
  EXPECT_EQ(tokens[mask], "<|mdm_mask|>");
  EXPECT_LE(f.file_size(), 8u << 20) << "the committed demo model should stay a few MB";
}

// A trained model continues in corpus words; the random-weight reference below does not (same check).
TEST_F(TinyModel, GreedyContinuationIsMostlyCorpusWords) {
  const Generation g = generate(model_path(), vocab_, /*no_chat=*/false);
  std::set<std::string> distinct(g.words.begin(), g.words.end());
  // 32 BPE tokens of English are about 20-25 words.
  EXPECT_GE(g.words.size(), 10u) << g.text;
  EXPECT_GE(distinct.size(), 6u) << "degenerate repetition: " << g.text;
  EXPECT_GE(g.corpus_share, kMinCorpusWordShare) << g.text;
}

TEST_F(TinyModel, RandomWeightReferenceFailsTheSameCheck) {
  const std::string ref = llada_path();
  if (!std::filesystem::exists(ref)) GTEST_SKIP() << "no " << ref;
  const Generation g = generate(ref, vocab_, /*no_chat=*/true);
  EXPECT_GE(g.words.size(), 5u) << g.text;
  EXPECT_LT(g.corpus_share, kMinCorpusWordShare) << g.text;
}

}  // namespace
}  // namespace dllm::test
