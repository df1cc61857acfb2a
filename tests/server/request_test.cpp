// The request parser (server/request.h) on bodies written by hand: each bad field gives a 400 that
// names it, the error JSON has OpenAI's four keys, and the stop-string matcher holds back exactly
// the text that could still begin a stop string.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/request.h"
#include "server/stop_strings.h"

namespace dllm::server {
namespace {

using nlohmann::json;

ApiError error_of(Endpoint e, const std::string& body) {
  auto r = parse_generation_request(e, body, "tiny");
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}

GenerationRequest ok(Endpoint e, const std::string& body) {
  auto r = parse_generation_request(e, body, "tiny");
  if (auto* err = std::get_if<ApiError>(&r)) ADD_FAILURE() << body << ": " << err->message;
  return std::holds_alternative<GenerationRequest>(r) ? std::get<GenerationRequest>(r) : GenerationRequest{};
}

TEST(Request, ChatFieldsParsed) {
  const auto r = ok(Endpoint::kChat, R"({"model": "tiny", "messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null}], "max_tokens": 32, "temperature": 0.5, "top_p": 0.9, "top_k": 5,
      "seed": 7, "stop": ["x", "yz"], "stream": true, "stream_options": {"include_usage": true}, "steps": 16,
      "block_length": 8, "threshold": 0.9, "cache": "dual", "alg": "entropy", "alg_temp": 0.1,
      "remasking": "random", "cfg_scale": 1.5, "dllm": {"canvas": true}, "user": "ignored"})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.max_tokens, 32);
  EXPECT_EQ(r.temperature, 0.5);
  EXPECT_EQ(r.top_k, 5);
  EXPECT_EQ(r.seed, 7u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_TRUE(r.stream && r.include_usage && r.canvas_events);
  EXPECT_EQ(r.cache, "dual");
  EXPECT_EQ(r.remasking, "random");
  // 64.0 is a whole number; null is absent.
  EXPECT_EQ(ok(Endpoint::kCompletion, R"({"prompt": "p", "max_tokens": 64.0, "seed": null})").max_tokens, 64);
  EXPECT_EQ(ok(Endpoint::kCompletion, R"({"prompt": ["p"], "max_completion_tokens": 3})").max_tokens, 3);
}

TEST(Request, EachBadFieldNamed) {
  struct Case {
    Endpoint e;
    const char* body;
    const char* param;
    const char* words;
  };
  const Case cases[] = {
      {Endpoint::kChat, R"({"messages": []})", "messages", "messages is empty"},
      {Endpoint::kChat, R"({})", "messages", "messages is missing"},
      {Endpoint::kChat, R"({"messages": "hi"})", "messages", "must be an array"},
      {Endpoint::kChat, R"({"messages": [{"role": "bot", "content": "x"}]})", "messages[0].role",
       "system, user or assistant"},
      {Endpoint::kChat, R"({"messages": [{"role": "user"}]})", "messages[0].content", "is missing"},
      {Endpoint::kChat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
       "must be a string"},
      {Endpoint::kChat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
       "messages[0].content[0].type", "text"},
      {Endpoint::kCompletion, R"({"prompt": 5})", "prompt", "must be a string"},
      {Endpoint::kCompletion, R"({"prompt": [1, 2]})", "prompt", "token ids"},
      {Endpoint::kCompletion, R"({"prompt": "p", "max_tokens": 0})", "max_tokens", ">= 1, got 0"},
      {Endpoint::kCompletion, R"({"prompt": "p", "max_tokens": -3})", "max_tokens", ">= 1, got -3"},
      {Endpoint::kCompletion, R"({"prompt": "p", "max_tokens": "64"})", "max_tokens", "got a string"},
      {Endpoint::kCompletion, R"({"prompt": "p", "max_tokens": 1.5})", "max_tokens", "whole number"},
      {Endpoint::kCompletion, R"({"prompt": "p", "temperature": -1})", "temperature", "[0, inf)"},
      {Endpoint::kCompletion, R"({"prompt": "p", "top_p": 1.5})", "top_p", "[0, 1]"},
      {Endpoint::kCompletion, R"({"prompt": "p", "seed": -1})", "seed", ">= 0"},
      {Endpoint::kCompletion, R"({"prompt": "p", "stream": "yes"})", "stream", "true or false"},
      {Endpoint::kCompletion, R"({"prompt": "p", "stop": ["a", "b", "c", "d", "e"]})", "stop", "at most 4"},
      {Endpoint::kCompletion, R"({"prompt": "p", "stop": [""]})", "stop", "must not be empty"},
      {Endpoint::kCompletion, R"({"prompt": "p", "cache": "full"})", "cache", "none, prefix, dual"},
      {Endpoint::kCompletion, R"({"prompt": "p", "n": 2})", "n", "n must be 1"},
      {Endpoint::kCompletion, R"({"prompt": "p", "steps": 0})", "steps", ">= 1"},
      {Endpoint::kCompletion, R"({"prompt": "p", "dllm": {"canvas": true}})", "dllm.canvas", "stream"},
      {Endpoint::kCompletion, R"({"prompt": "p", "model": 3})", "model", "must be a string"},
      {Endpoint::kCompletion, R"({"prompt": "p", "eb_t_min": 0})", "eb_t_min", "(0, inf)"},
      // Temperatures are held as float: 1e39 would become inf and 1e-50 zero.
      {Endpoint::kCompletion, R"({"prompt": "p", "eb_t_max": 1e39})", "eb_t_max", "must be a positive float"},
      {Endpoint::kCompletion, R"({"prompt": "p", "eb_t_min": 1e-50})", "eb_t_min",
       "must be a positive float"},
      {Endpoint::kCompletion, R"({"prompt": "p", "eb_stability": -1})", "eb_stability", ">= 0"},
      {Endpoint::kCompletion, R"({"prompt": "p", "eb_confidence": "low"})", "eb_confidence", "got a string"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.e, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_NE(e.message.find(c.words), std::string::npos) << c.body << ": " << e.message;
  }
}

TEST(Request, MalformedJsonAndUnknownModel) {
  for (const char* body : {"", "{", "[1]", "\"text\"", "{\"messages\": [}", "\xff\xfe"}) {
    const ApiError e = error_of(Endpoint::kChat, body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.code, "invalid_json") << body;
  }
  const ApiError e =
      error_of(Endpoint::kChat, R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.code, "model_not_found");
  EXPECT_NE(e.message.find("'tiny'"), std::string::npos) << e.message;
}

TEST(Request, ErrorBodyHasOpenAiShape) {
  const json j = json::parse(error_body(invalid_request("bad", "max_tokens")));
  EXPECT_EQ(j["error"]["message"], "bad");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "max_tokens");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  const json n = json::parse(error_body(internal_error("x")));
  EXPECT_TRUE(n["error"]["param"].is_null());
  // An echoed field with invalid UTF-8 does not break the JSON.
  EXPECT_NO_THROW(json::parse(error_body(invalid_request("bad \xff byte"))));
}

TEST(StopStrings, HoldsBackAPossibleStart) {
  StopMatcher m({"END", "xyz"});
  EXPECT_EQ(m.push("hello E"), "hello ");  // "E" may begin "END"
  EXPECT_EQ(m.push("N"), "");              // "EN" still may
  EXPECT_EQ(m.push("x"), "EN");            // "ENx" is not "END", but "x" may begin "xyz"
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.finish(), "x");
}

TEST(StopStrings, CutsAtTheFirstStop) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abc EN"), "abc ");
  EXPECT_EQ(m.push("D and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.push("later"), "");
  EXPECT_EQ(m.finish(), "");
  StopMatcher n({"END"});
  EXPECT_EQ(n.push("no stop E"), "no stop ");
  EXPECT_EQ(n.finish(), "E");
  bool found = false;
  EXPECT_EQ(cut_at_stop("one two three", {"three", "two"}, &found), "one ");
  EXPECT_TRUE(found);
  EXPECT_EQ(cut_at_stop("one", {"x"}, &found), "one");
  EXPECT_FALSE(found);
}

}  // namespace
}  // namespace dllm::server
