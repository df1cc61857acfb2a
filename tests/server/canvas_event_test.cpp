// The canvas event (server/canvas_event.h) on canvases written by hand over a five-token vocabulary:
// the cells, the counts, the block, and the positions a re-noising step changed, as docs/serving.md
// defines them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "server/canvas_event.h"

namespace dllm::server {
namespace {

using nlohmann::json;

constexpr int32_t kA = 0, kB = 1, kNl = 2, kEot = 3, kMask = 4, kHalf = 5;
constexpr int32_t M = kMask;

/// "a", " b", "\n", <|eot_id|> (control, the end token), <|mdm_mask|> (control), and the lone byte
/// 0xC3 (half of a two-byte character), in GPT-2's byte-to-unicode spelling.
tokenizer::Tokenizer vocab() {
  tokenizer::VocabSpec s;
  s.tokens = {"a", "\u0120b", "\u010a", "<|eot_id|>", "<|mdm_mask|>", "\u00c3"};
  s.token_types = {1, 1, 1, 3, 3, 1};
  s.eot_id = kEot;
  s.mask_id = kMask;
  return tokenizer::Tokenizer::from_vocab(s);
}

json event(const std::vector<int32_t>& answer, const std::vector<int32_t>& before,
           const std::vector<int32_t>& committed, int64_t block_begin, int64_t block_end) {
  static const tokenizer::Tokenizer tok = vocab();
  CanvasStep s;
  s.id = "chatcmpl-1";
  s.step = 2;
  s.step_ms = 1.23456;
  s.answer = answer;
  s.before = before;
  s.committed = committed;
  s.block_begin = block_begin;
  s.block_end = block_end;
  s.mask_id = kMask;
  return json::parse(canvas_event_body(s, tok));
}

TEST(CanvasEvent, FirstStepOfABlock) {
  const json j = event({kA, M, M, kB}, {}, {0, 3}, 0, 2);
  EXPECT_EQ(j["object"], "dllm.canvas");
  EXPECT_EQ(j["id"], "chatcmpl-1");
  EXPECT_EQ(j["step"], 2);
  EXPECT_DOUBLE_EQ(j["step_ms"].get<double>(), 1.235);
  EXPECT_EQ(j["tokens_committed"], 2);
  EXPECT_EQ(j["committed"], json({0, 3}));
  EXPECT_EQ(j["committed_total"], 2);
  EXPECT_EQ(j["mask"], "\u2591");
  EXPECT_EQ(j["text"], "a\u2591\u2591 b");
  EXPECT_EQ(j["cells"], json({"a", nullptr, nullptr, " b"}));
  EXPECT_EQ(j["ends"], json::array());
  EXPECT_EQ(j["block"], json({0, 2}));
  EXPECT_FALSE(j.contains("changed")) << "nothing held a token before the first step";
}

TEST(CanvasEvent, NoBlockWhenTheBlockIsTheWholeAnswer) {
  EXPECT_FALSE(event({kA, M}, {M, M}, {0}, 0, 2).contains("block"));
  EXPECT_EQ(event({kA, M}, {M, M}, {0}, 1, 2)["block"], json({1, 2}));
}

// A re-noising step: position 1 goes back to a mask, position 3 changes token, position 2 is
// committed from a mask (committed, not changed).
TEST(CanvasEvent, ChangedPositionsOfARenoisingStep) {
  const json j = event({kA, M, kNl, kB}, {kA, kB, M, kEot}, {2}, 0, 4);
  EXPECT_EQ(j["changed"], json({1, 3}));
  EXPECT_EQ(j["committed"], json({2}));
  EXPECT_EQ(j["cells"], json({"a", nullptr, "\n", " b"}));
  EXPECT_EQ(j["committed_total"], 3);
  EXPECT_EQ(j["ends"], json::array());
}

// End tokens: their cells spell them out, `ends` lists them, the text skips them (as decode does).
TEST(CanvasEvent, EndTokens) {
  const json j = event({kA, kEot, M, kEot}, {kA, M, M, M}, {1, 3}, 0, 4);
  EXPECT_EQ(j["cells"], json({"a", "<|eot_id|>", nullptr, "<|eot_id|>"}));
  EXPECT_EQ(j["ends"], json({1, 3}));
  EXPECT_EQ(j["text"], "a\u2591");
  EXPECT_FALSE(j.contains("changed"));
}

// A token that is half a character shows U+FFFD in its cell; the event stays valid JSON.
TEST(CanvasEvent, HalfACharacterIsReplaced) {
  const json j = event({kHalf, M}, {}, {0}, 0, 2);
  EXPECT_EQ(j["cells"][0], "\ufffd");
  EXPECT_EQ(j["text"], "\ufffd\u2591");
}

}  // namespace
}  // namespace dllm::server
