// The gemma4 tokenizer (SentencePiece-style BPE over raw UTF-8) and Gemma's chat template on the tiny
// DiffusionGemma file, against llama.cpp PR #24423's build: llama-tokenize's ids for 12 strings with
// three flag sets (tests/data/diffusion-gemma/tokenizer/golden.jsonl) and the prompt ids
// llama-diffusion-cli fed for three prompts (cli/*-seed1.tokens.json, rendered through the file's
// template).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::tokenizer {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path data_dir() {
  return fs::path(DLLM_SOURCE_DIR) / "tests" / "data" / "diffusion-gemma";
}

TEST(Gemma4Tokenizer, MatchesLlamaTokenize) {
  const auto file = gguf::GgufFile::open((data_dir() / "tiny-diffusion-gemma-q4km.gguf").string());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  ASSERT_TRUE(tok.add_bos());
  std::ifstream f(data_dir() / "tokenizer" / "golden.jsonl");
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    if (line.empty()) continue;
    const json j = json::parse(line);
    const std::string text = j["text"].get<std::string>();
    // llama-tokenize adds BOS (add_special) in the first two flag sets, not with --no-bos.
    std::vector<int32_t> special = {tok.bos_id()}, plain = {tok.bos_id()};
    const auto s = tok.encode(text, true), p = tok.encode(text, false);
    special.insert(special.end(), s.begin(), s.end());
    plain.insert(plain.end(), p.begin(), p.end());
    EXPECT_EQ(special, j["ids_add_special_parse_special"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(plain, j["ids_add_special_no_parse"].get<std::vector<int32_t>>()) << text;
    EXPECT_EQ(s, j["ids_no_bos_parse_special"].get<std::vector<int32_t>>()) << text;
    // Decoding gives the text back (spaces from U+2581, bytes from <0xXX>) when no special text is in it.
    if (s == p) {
      EXPECT_EQ(tok.decode(s), text);
    }
    ++n;
  }
  EXPECT_EQ(n, 12);
  // llama.cpp's end-of-generation set for this vocabulary: <eos>, <turn|>, <|tool_response>.
  EXPECT_EQ(tok.eog_ids(), (std::vector<int32_t>{1, 6, 11}));
}

TEST(Gemma4Tokenizer, ChatPromptIsTheClis) {
  const auto file = gguf::GgufFile::open((data_dir() / "tiny-diffusion-gemma-q4km.gguf").string());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(detect_chat_template(tok.chat_template()), ChatTemplateKind::kGemma4);
  const struct {
    const char* run;
    const char* prompt;
  } cases[] = {{"defaults-seed1", "What is 2+2?"},
               {"converge-seed1", "Write a short poem about the sea."},
               {"blocks-seed1", "Tell me a story."}};
  for (const auto& c : cases) {
    std::ifstream f(data_dir() / "cli" / (std::string(c.run) + ".tokens.json"));
    const json j = json::parse(f);
    ChatOptions o;
    o.prompt = c.prompt;
    EXPECT_EQ(prompt_tokens(tok, o), j["prompt_ids"].get<std::vector<int32_t>>()) << c.run;
    // The rendered text is the CLI's (without the BOS text, which tokenization adds).
    std::ifstream t(data_dir() / "cli" / (std::string(c.run) + ".prompt.txt"), std::ios::binary);
    const std::string want((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    EXPECT_EQ(render_chat(tok, o), want) << c.run;
    o.parse_special = false;  // markers inserted as ids: the same ids for a prompt without marker text
    EXPECT_EQ(prompt_tokens(tok, o), j["prompt_ids"].get<std::vector<int32_t>>()) << c.run;
    // The CLI's reply bytes are our decoding of its response ids.
    const std::string hex = j["response_text_hex"].get<std::string>();
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    EXPECT_EQ(tok.decode(j["response_ids"].get<std::vector<int32_t>>()), bytes) << c.run;
  }
  // A system turn and an assistant turn ("model").
  ChatOptions o;
  o.messages = {{"system", " Be brief. "}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}};
  EXPECT_EQ(render_chat(tok, o),
            "<|turn>system\nBe brief.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello<turn|>\n"
            "<|turn>user\nBye<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
}

}  // namespace
}  // namespace dllm::tokenizer
