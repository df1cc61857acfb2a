// The errors `dllm serve` answers with, in OpenAI's shape: HTTP status plus
// {"error": {"message", "type", "param", "code"}} (platform.openai.com/docs/guides/error-codes), with
// the `type` words llama.cpp's server uses (tools/server/utils.hpp format_error_response), so a client
// written for either one reads them.
#pragma once

#include <optional>
#include <string>

namespace dllm::server {

struct ApiError {
  int status = 400;                  ///< HTTP status: 400, 401, 404, 405, 408, 413, 500, 503
  std::string message;               ///< one sentence: what is wrong and what to send instead
  std::string type;                  ///< "invalid_request_error", "authentication_error", ...
  std::string param;                 ///< the request field at fault ("max_tokens", "messages[1].role"), or ""
  std::string code;                  ///< machine-readable reason ("invalid_value", "model_not_found"), or ""
  std::optional<int> retry_after_s;  ///< 503 only: the Retry-After header's seconds
};

/// The response body: {"error": {"message", "type", "param", "code"}}; "param" and "code" are null
/// when empty, as OpenAI sends them.
std::string error_body(const ApiError& e);

/// 400 invalid_request_error for `param` (code "invalid_value" unless given).
ApiError invalid_request(std::string message, std::string param = "", std::string code = "invalid_value");

/// 404 for a route that does not exist: names the method and path, and `routes` (the route table as
/// text, "POST /v1/chat/completions, GET /health, ...").
ApiError route_not_found(const std::string& method, const std::string& path, const std::string& routes);

/// 405 for a route that exists with another method (`allowed`: "GET" or "POST").
ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allowed);

/// 401 for a missing or wrong `Authorization: Bearer KEY`.
ApiError unauthorized(bool key_given);

/// 413 for a body over `limit_bytes`.
ApiError body_too_large(size_t limit_bytes);

/// 503 with Retry-After: every canvas busy and the queue full.
ApiError queue_full(int active, int queued, int retry_after_s);

/// 503 while the model loads (no Retry-After needed: /health says when).
ApiError model_loading();

/// 503 for requests cut short by shutdown (SIGTERM, Ctrl-C).
ApiError shutting_down();

/// 503 with Retry-After 1: the server already serves `max_connections` connections.
ApiError too_many_connections(int max_connections);

/// 408: the request line, headers and body did not all arrive within `seconds` of the first byte.
ApiError request_timeout(double seconds);

/// 400: a TLS handshake sent to the plain-HTTP port.
ApiError tls_on_plain_http();

/// 500 server_error: an unexpected exception's message.
ApiError internal_error(const std::string& what);

}  // namespace dllm::server
