// See api_error.h.
#include "server/api_error.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace dllm::server {

std::string error_body(const ApiError& e) {
  nlohmann::json err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param);
  err["code"] = e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code);
  // Invalid UTF-8 in a message (an echoed field) must not throw here: replace it.
  return nlohmann::json{{"error", err}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
  return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code), std::nullopt};
}

ApiError route_not_found(const std::string& method, const std::string& path, const std::string& routes) {
  return {404,
          "no route " + method + " " + path + "; the routes are " + routes,
          "not_found_error",
          "",
          "route_not_found",
          std::nullopt};
}

ApiError method_not_allowed(const std::string& method, const std::string& path, const std::string& allowed) {
  return {405,
          method + " is not allowed on " + path + "; use " + allowed,
          "invalid_request_error",
          "",
          "method_not_allowed",
          std::nullopt};
}

ApiError unauthorized(bool key_given) {
  return {401,
          key_given
              ? "incorrect API key: send the key the server was started with (--api-key or DLLM_API_KEY)"
              : "missing API key: send the header 'Authorization: Bearer KEY' with the server's key",
          "authentication_error",
          "",
          "invalid_api_key",
          std::nullopt};
}

ApiError body_too_large(size_t limit_bytes) {
  return {413,
          "the request body is larger than the server's limit of " + std::to_string(limit_bytes) +
              " bytes (--max-body-bytes)",
          "invalid_request_error",
          "",
          "request_too_large",
          std::nullopt};
}

ApiError queue_full(int active, int queued, int retry_after_s) {
  return {503,
          "the server is busy: " + std::to_string(active) + " requests running and " +
              std::to_string(queued) + " waiting (--parallel, --queue); retry after " +
              std::to_string(retry_after_s) + " s",
          "unavailable_error",
          "",
          "queue_full",
          retry_after_s};
}

ApiError model_loading() {
  return {503,
          "the model is still loading; GET /health answers 200 once it is ready",
          "unavailable_error",
          "",
          "model_loading",
          std::nullopt};
}

ApiError shutting_down() {
  return {503,
          "the server is shutting down; the request was not finished",
          "unavailable_error",
          "",
          "shutting_down",
          std::nullopt};
}

ApiError too_many_connections(int max_connections) {
  return {503,
          "the server is serving its limit of " + std::to_string(max_connections) +
              " connections (--max-connections); retry after 1 s",
          "unavailable_error",
          "",
          "too_many_connections",
          1};
}

ApiError request_timeout(double seconds) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", seconds);
  return {408,
          std::string("the request did not arrive whole within ") + s +
              " s of its first byte (--request-timeout); send the headers and body at once",
          "invalid_request_error",
          "",
          "request_timeout",
          std::nullopt};
}

ApiError tls_on_plain_http() {
  return {400,
          "this port speaks plain HTTP, not TLS: use http://, or put a TLS proxy in front (docs/serving.md)",
          "invalid_request_error",
          "",
          "tls_on_plain_http",
          std::nullopt};
}

ApiError internal_error(const std::string& what) {
  return {500, "internal error: " + what, "server_error", "", "internal_error", std::nullopt};
}

}  // namespace dllm::server
