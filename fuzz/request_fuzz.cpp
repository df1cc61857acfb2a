// libFuzzer harness: a request body for POST /v1/chat/completions or /v1/completions through
// server::parse_generation_request, the pure parser `dllm serve` runs on every body.
//
// Input: byte 0 bit 0 chooses the route (0 chat, 1 completions); the rest is the body.
//
// Properties: the parser never throws; text that is not one JSON value (nlohmann::json::accept, an
// independent check) is a 400 invalid_json; every error is 400 or 404 with a message, and its body
// is one JSON object with OpenAI's four keys; every accepted request keeps the documented ranges
// (at least one message with a known role, max_tokens >= 1, top_p in (0, 1], temperature >= 0, at
// most 4 non-empty stop strings, the canvas extension only when streaming).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/request.h"

#define REQUEST_CHECK(cond, msg)                                                                        \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      std::fprintf(stderr, "check failed: %s (%s:%d): %s\n", #cond, __FILE__, __LINE__, (msg).c_str()); \
      std::abort();                                                                                     \
    }                                                                                                   \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dllm::server;
  if (size == 0) return 0;
  const Endpoint e = (data[0] & 1) ? Endpoint::kCompletion : Endpoint::kChat;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto r = parse_generation_request(e, body, "tiny");
  if (const auto* err = std::get_if<ApiError>(&r)) {
    REQUEST_CHECK(err->status == 400 || err->status == 404, err->message);
    REQUEST_CHECK(!err->message.empty(), std::string("empty message"));
    const auto j = nlohmann::json::parse(error_body(*err));
    REQUEST_CHECK(j.size() == 1 && j["error"].size() == 4, j.dump());
    if (!nlohmann::json::accept(body)) REQUEST_CHECK(err->code == "invalid_json", err->message);
    return 0;
  }
  REQUEST_CHECK(nlohmann::json::accept(body), std::string("accepted a body that is not JSON"));
  const GenerationRequest& g = std::get<GenerationRequest>(r);
  if (e == Endpoint::kChat) {
    REQUEST_CHECK(!g.messages.empty(), std::string("no messages"));
    for (const auto& m : g.messages) {
      REQUEST_CHECK(m.role == "system" || m.role == "user" || m.role == "assistant", m.role);
    }
  }
  REQUEST_CHECK(!g.max_tokens || *g.max_tokens >= 1, std::to_string(*g.max_tokens));
  REQUEST_CHECK(!g.top_p || (*g.top_p > 0 && *g.top_p <= 1), std::to_string(*g.top_p));
  REQUEST_CHECK(!g.temperature || *g.temperature >= 0, std::to_string(*g.temperature));
  REQUEST_CHECK(g.stop.size() <= 4, std::to_string(g.stop.size()));
  for (const auto& s : g.stop) REQUEST_CHECK(!s.empty(), std::string("empty stop string"));
  REQUEST_CHECK(!g.canvas_events || g.stream, std::string("canvas without stream"));
  return 0;
}
