// prepare_request (server/prepare.h) with the tiny reference models: the chat route feeds a base
// model's messages as raw text (RND1's prompt rule, model/rnd1.cpp), the ids `dllm run` feeds for the
// same text (the tokenizer's own no-chat rendering), while a chat model's messages go through its
// template.
#include "server/prepare.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>

#include "engine/engine.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "test_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace dllm::server {
namespace {

struct Served {
  gguf::GgufFile file;
  model::Model model;
  tokenizer::Tokenizer tok;
  std::unique_ptr<engine::Engine> engine;
  explicit Served(const std::string& name)
      : file(gguf::GgufFile::open(test::reference(name).string())),
        model(model::Model::load(file)),
        tok(tokenizer::Tokenizer::from_gguf(file)) {
    engine::EngineOptions o;
    o.parallel = 1;
    o.max_canvas = 128;
    o.threads = 1;
    engine = std::make_unique<engine::Engine>(model, o);
  }
  std::vector<int32_t> prompt_of(const std::vector<tokenizer::ChatMessage>& messages) {
    ModelContext m;
    m.tok = &tok;
    m.config = &model.config();
    m.engine = engine.get();
    m.max_canvas = 128;
    m.defaults.max_tokens = 8;
    GenerationRequest r;
    r.messages = messages;
    auto out = prepare_request(r, m);
    if (auto* e = std::get_if<ApiError>(&out)) {
      ADD_FAILURE() << e->message;
      return {};
    }
    return std::get<PreparedRequest>(out).spec.prompt;
  }
};

TEST(Prepare, ABaseModelsMessagesAreRawText) {
  if (const std::string why = test::missing_reference(); !why.empty()) GTEST_SKIP() << why;
  const std::vector<tokenizer::ChatMessage> turns = {{"user", "What is 2+2?"}, {"user", " Tell me."}};
  tokenizer::ChatOptions raw;
  raw.prompt = "What is 2+2? Tell me.";
  raw.no_chat = true;
  Served rnd1("tiny-rnd1-q4km.gguf");
  EXPECT_EQ(rnd1.prompt_of(turns), tokenizer::prompt_tokens(rnd1.tok, raw));
  // A chat model's template applies: not the raw ids.
  Served llada_moe("tiny-llada-moe-q4km.gguf");
  EXPECT_NE(llada_moe.prompt_of(turns), tokenizer::prompt_tokens(llada_moe.tok, raw));
}

}  // namespace
}  // namespace dllm::server
