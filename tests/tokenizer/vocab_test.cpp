// Vocabulary loading: special ids, EOT/EOG detection and CONTROL promotion as llama.cpp reports them
// for the reference files (../shared/reference/README.md, "What llama.cpp reports when loading the
// vocab"), sampleable ids, BPE merge order on a hand-made vocabulary, load errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "tok_fixture.h"
#include "tokenizer/utf8.h"

namespace dllm::test {
namespace {

using tokenizer::Tokenizer;
using tokenizer::VocabSpec;

std::set<std::string> eog_texts(const Tokenizer& t) {
  std::set<std::string> s;
  for (int32_t id : t.eog_ids()) s.insert(t.token_text(id));
  return s;
}

int32_t mask_from_logits_json(const std::string& arch) {
  auto j = nlohmann::json::parse(read_text(reference("logits/logits-tiny-" + arch + "-a.json")));
  return j["mask_token_id"].get<int32_t>();
}

TEST(Vocab, LladaSpecialIds) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = llada_tok();
  EXPECT_EQ(t.pre(), "bailingmoe");
  EXPECT_EQ(t.token_text(t.bos_id()), "<|startoftext|>");
  EXPECT_EQ(t.token_text(t.eos_id()), "<|endoftext|>");
  EXPECT_EQ(t.token_text(t.eot_id()), "<|eot_id|>");
  EXPECT_EQ(t.mask_id(), mask_from_logits_json("llada"));
  EXPECT_EQ(t.token_text(t.mask_id()), "<|mdm_mask|>");
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(eog_texts(t), (std::set<std::string>{"<|endoftext|>", "<|eot_id|>"}));
  EXPECT_TRUE(t.is_eog(t.eot_id()));
  EXPECT_FALSE(t.is_eog(t.mask_id()));
  EXPECT_FALSE(t.chat_template().empty());
}

// Dream: EOT auto-detected as <|im_end|>; EOG adds </s> (an ordinary Qwen2 token promoted by its text)
// and FIM pad/repo/file_sep; the USER_DEFINED fim tokens and </s> become CONTROL; <tool_call> stays
// USER_DEFINED (matched even without special parsing, printed by decode).
TEST(Vocab, DreamSpecialIdsAndPromotion) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = dream_tok();
  EXPECT_EQ(t.pre(), "qwen2");
  EXPECT_FALSE(t.add_bos());
  EXPECT_EQ(t.token_text(t.bos_id()), "<|endoftext|>");
  EXPECT_EQ(t.token_text(t.eot_id()), "<|im_end|>");
  EXPECT_EQ(t.mask_id(), mask_from_logits_json("dream"));
  EXPECT_EQ(t.token_text(t.mask_id()), "<|mask|>");
  EXPECT_EQ(eog_texts(t), (std::set<std::string>{"</s>", "<|endoftext|>", "<|im_end|>", "<|fim_pad|>",
                                                 "<|repo_name|>", "<|file_sep|>"}));
  for (const char* s : {"</s>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
                        "<|repo_name|>", "<|file_sep|>"}) {
    EXPECT_TRUE(t.is_control(t.find_token(s))) << s;
  }
  const int32_t tool = t.find_token("<tool_call>");
  EXPECT_FALSE(t.is_control(tool));
  EXPECT_TRUE(t.attr(tool) & tokenizer::kAttrUserDefined);
  EXPECT_EQ(t.encode("a<tool_call>b", false),
            (std::vector<int32_t>{t.encode("a", false)[0], tool, t.encode("b", false)[0]}));
  EXPECT_EQ(t.decode(t.encode("x<tool_call>y", false)), "x<tool_call>y");
  // Control tokens are not printed by decode() but are by token_to_piece().
  const std::vector<int32_t> ids = {t.find_token("<|im_start|>"), t.encode("hi", false)[0], t.eot_id()};
  EXPECT_EQ(t.decode(ids), "hi");
  EXPECT_EQ(t.token_to_piece(ids[0]), "<|im_start|>");
  EXPECT_EQ(t.token_to_piece(ids[0], false), "");
}

TEST(Vocab, SampleableIds) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = dream_tok();
  const int32_t pad = t.find_token("[PAD151700]");
  ASSERT_GE(pad, 0);
  EXPECT_EQ(t.attr(pad), tokenizer::kAttrUnused);
  EXPECT_FALSE(t.is_sampleable(pad));
  EXPECT_TRUE(t.is_sampleable(t.encode("Hello", false)[0]));
  EXPECT_FALSE(t.is_sampleable(t.n_tokens()));
  EXPECT_FALSE(t.is_sampleable(-1));
  const auto mask = t.sampleable_mask(t.n_tokens() + 5);
  ASSERT_EQ(mask.size(), static_cast<size_t>(t.n_tokens() + 5));
  EXPECT_FALSE(mask[t.n_tokens() + 4]);
  EXPECT_FALSE(mask[pad]);
  // The UNUSED padding rows decode to nothing (llama.cpp token_to_piece gives 0 bytes).
  EXPECT_EQ(t.decode(std::vector<int32_t>{pad}), "");
  EXPECT_THROW(t.decode(std::vector<int32_t>{t.n_tokens()}), Error);
}

// A hand-made byte-level vocabulary: the 256 byte characters, then merge results.
VocabSpec byte_vocab(std::vector<std::string> extra, std::vector<std::string> merges) {
  VocabSpec s;
  s.pre = "gpt2";
  const auto& bu = tokenizer::byte_unicode_map();
  for (int b = 0; b < 256; ++b) s.tokens.push_back(bu.byte_to_utf8[b]);
  for (auto& e : extra) s.tokens.push_back(e);
  s.merges = std::move(merges);
  return s;
}

TEST(Bpe, MergeOrderByRankThenLeftmost) {
  // ids: 'a' = 97, 'b' = 98, 'c' = 99; extras from 256.
  {  // rank decides: "b c" (rank 0) before "a b" (rank 1): abc -> a + bc
    const Tokenizer t = Tokenizer::from_vocab(byte_vocab({"bc", "ab"}, {"b c", "a b"}));
    EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{97, 256}));
  }
  {  // the other order: abc -> ab + c
    const Tokenizer t = Tokenizer::from_vocab(byte_vocab({"bc", "ab"}, {"a b", "b c"}));
    EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{257, 99}));
  }
  {  // equal rank (same pair twice): leftmost first: aaa -> aa + a; aaaa -> aa + aa -> aaaa
    const Tokenizer t = Tokenizer::from_vocab(byte_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
    EXPECT_EQ(t.encode("aaa", false), (std::vector<int32_t>{256, 97}));
    EXPECT_EQ(t.encode("aaaa", false), (std::vector<int32_t>{257}));
    EXPECT_EQ(t.encode("aaaaa", false), (std::vector<int32_t>{257, 97}));
  }
  {  // bytes map through GPT-2's table: ' ' is U+0120 'Ġ', so " a" merges via "Ġ a"
    const Tokenizer t = Tokenizer::from_vocab(byte_vocab({"\xC4\xA0"
                                                          "a"},
                                                         {"\xC4\xA0 a"}));
    EXPECT_EQ(t.encode(" a", false), (std::vector<int32_t>{256}));
    EXPECT_EQ(t.decode(t.encode(" a", false)), " a");
  }
}

TEST(Bpe, LongWordIsFast) {
  // 1 MB of one letter is a single pre-token: the heap-based merge must not be quadratic.
  const Tokenizer t = Tokenizer::from_vocab(byte_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
  const auto ids = t.encode(std::string(1 << 20, 'a'), false);
  EXPECT_EQ(ids.size(), static_cast<size_t>(1 << 18));
}

TEST(VocabErrors, UnsupportedModelAndPre) {
  VocabSpec s = byte_vocab({}, {});
  s.model = "llama";
  try {
    Tokenizer::from_vocab(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "unsupported tokenizer.ggml.model: llama (supported: gpt2, byte-level BPE; gemma4, "
              "SentencePiece-style BPE)");
  }
  s.model = "gpt2";
  s.pre = "tekken";
  try {
    Tokenizer::from_vocab(s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported tokenizer.ggml.pre: tekken"), std::string::npos);
  }
  s.pre.reset();  // absent -> "default", as llama.cpp
  EXPECT_EQ(Tokenizer::from_vocab(s).pre(), "default");
  s.token_types = {1, 1};
  EXPECT_THROW(Tokenizer::from_vocab(s), Error);
  s.token_types.clear();
  s.merges = {"nospace"};
  EXPECT_THROW(Tokenizer::from_vocab(s), Error);
}

// A BYTE-type token decodes to its byte only when its text is <0xNN>; any other text (a hostile or
// broken vocabulary) decodes to nothing instead of escaping std::stoi's std::invalid_argument.
TEST(VocabErrors, ByteTokenWithoutHexDigits) {
  VocabSpec s = byte_vocab({"<0x41>", "<0xZZ>", "<0x-1>", "<0x4G>"}, {});
  s.token_types.assign(s.tokens.size(), static_cast<int32_t>(tokenizer::TokenType::NORMAL));
  for (size_t i = 256; i < s.tokens.size(); ++i)
    s.token_types[i] = static_cast<int32_t>(tokenizer::TokenType::BYTE);
  const Tokenizer t = Tokenizer::from_vocab(s);
  EXPECT_EQ(t.decode(std::vector<int32_t>{256}), "A");
  for (int32_t id : {257, 258, 259}) EXPECT_EQ(t.decode(std::vector<int32_t>{id}), "") << t.token_text(id);
}

}  // namespace
}  // namespace dllm::test
