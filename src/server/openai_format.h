// The JSON bodies `dllm serve` answers with, in OpenAI's shapes (platform.openai.com/docs/api-reference:
// chat.completion, chat.completion.chunk, text_completion, model list), and the SSE framing of a
// stream ("data: <json>\n\n", ended by "data: [DONE]\n\n").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/request.h"

namespace dllm::server {

/// What a finished generation returns to the client.
struct Completion {
  std::string id;             ///< "chatcmpl-<n>" / "cmpl-<n>"
  std::string model;          ///< the served model's name
  int64_t created = 0;        ///< Unix seconds
  std::string text;           ///< the answer (up to its end token or stop string)
  std::string finish_reason;  ///< "stop" (end token or stop string) or "length" (canvas full)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  ///< answer tokens before the end token (not the whole canvas)
  int64_t steps = 0;              ///< forward passes run (a dllm extension field)
  uint64_t seed = 0;              ///< the seed the request ran with (dllm.seed), to replay it
  std::vector<std::string> warnings;  ///< settings ignored, notes on the prompt (dllm.warnings; omitted if none)
};

/// chat.completion (kChat) or text_completion (kCompletion), with usage and dllm {steps, seed}.
std::string completion_body(Endpoint endpoint, const Completion& c);

/// One streamed chunk carrying `delta` text (chat: choices[0].delta.content; completions:
/// choices[0].text). `first` adds the chat delta's role; `finish_reason` "" is null (the last chunk,
/// with a finish_reason, also carries dllm {steps, seed}).
std::string chunk_body(Endpoint endpoint, const Completion& c, const std::string& delta, bool first,
                       const std::string& finish_reason);

/// The last chunk of stream_options.include_usage: empty choices, usage set.
std::string usage_chunk_body(Endpoint endpoint, const Completion& c);

/// GET /v1/models/{id}: {"id", "object": "model", "created", "owned_by"}.
std::string model_body(const std::string& model_id, int64_t created);

/// GET /v1/models: {"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}.
std::string models_body(const std::string& model_id, int64_t created);

/// "data: <json>\n\n"; event names the SSE event type ("" = none, OpenAI's chunks).
std::string sse(const std::string& json, const std::string& event = "");

}  // namespace dllm::server
