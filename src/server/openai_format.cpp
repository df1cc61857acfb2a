// See openai_format.h.
#include "server/openai_format.h"

#include <nlohmann/json.hpp>

namespace dllm::server {

namespace {

using nlohmann::json;

std::string dump(const json& j) {
  // The answer may hold invalid UTF-8 only if a decoder let it through; never throw while answering.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json usage(const Completion& c) {
  return {{"prompt_tokens", c.prompt_tokens},
          {"completion_tokens", c.completion_tokens},
          {"total_tokens", c.prompt_tokens + c.completion_tokens}};
}

json head(Endpoint endpoint, const Completion& c, bool chunk) {
  const char* object =
      endpoint == Endpoint::kChat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return {{"id", c.id},
          {"object", object},
          {"created", c.created},
          {"model", c.model},
          {"system_fingerprint", "dllm"}};
}

json dllm_fields(const Completion& c) {
  json d = {{"steps", c.steps}, {"seed", c.seed}};
  if (!c.warnings.empty()) d["warnings"] = c.warnings;
  return d;
}

json finish(const std::string& reason) {
  return reason.empty() ? json(nullptr) : json(reason);
}

}  // namespace

std::string completion_body(Endpoint endpoint, const Completion& c) {
  json j = head(endpoint, c, false);
  json choice = {{"index", 0}, {"finish_reason", finish(c.finish_reason)}, {"logprobs", nullptr}};
  if (endpoint == Endpoint::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", c.text}};
  } else {
    choice["text"] = c.text;
  }
  j["choices"] = json::array({choice});
  j["usage"] = usage(c);
  j["dllm"] = dllm_fields(c);
  return dump(j);
}

std::string chunk_body(Endpoint endpoint, const Completion& c, const std::string& delta, bool first,
                       const std::string& finish_reason) {
  json j = head(endpoint, c, true);
  json choice = {{"index", 0}, {"finish_reason", finish(finish_reason)}, {"logprobs", nullptr}};
  if (endpoint == Endpoint::kChat) {
    json d = json::object();
    if (first) d["role"] = "assistant";
    if (!delta.empty() || first) d["content"] = delta;
    choice["delta"] = d;
  } else {
    choice["text"] = delta;
  }
  j["choices"] = json::array({choice});
  if (!finish_reason.empty()) j["dllm"] = dllm_fields(c);
  return dump(j);
}

std::string usage_chunk_body(Endpoint endpoint, const Completion& c) {
  json j = head(endpoint, c, true);
  j["choices"] = json::array();
  j["usage"] = usage(c);
  return dump(j);
}

std::string model_body(const std::string& model_id, int64_t created) {
  return dump({{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "dllm"}});
}

std::string models_body(const std::string& model_id, int64_t created) {
  return dump({{"object", "list"}, {"data", json::array({json::parse(model_body(model_id, created))})}});
}

std::string sse(const std::string& json_text, const std::string& event) {
  return (event.empty() ? "" : "event: " + event + "\n") + "data: " + json_text + "\n\n";
}

}  // namespace dllm::server
