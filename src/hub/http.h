// Minimal HTTP GET over libcurl for the hub client: redirects followed, per-hop response headers kept
// (the hub's X-Linked-Etag / X-Repo-Commit are on the first hop, the bytes on the last), a streaming
// body sink for downloads, connect and stall timeouts. Internal to src/hub.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dllm::hub {

/// Response headers of one hop, names lower-cased, values trimmed.
using Headers = std::map<std::string, std::string>;

struct HttpRequest {
  std::string url;
  std::string token;        ///< sent as "Authorization: Bearer <token>" when not empty
  uint64_t range_from = 0;  ///< > 0: "Range: bytes=<range_from>-"
  bool head = false;        ///< HEAD instead of GET
  bool follow_redirects = true;
  int connect_timeout_s = 10;
  int stall_timeout_s = 30;  ///< abort when under 1 byte/s for this long
  /// Receives the body of a 2xx final response (status and headers of that response given);
  /// return false to abort (reported as write_failed). Empty: the body goes to HttpReply::body.
  std::function<bool(long status, const Headers& headers, const char* data, size_t n)> sink;
  /// Without a sink: a 2xx body longer than this stops the transfer (HttpReply::body_too_large).
  size_t max_body_bytes = SIZE_MAX;
};

struct HttpReply {
  int curl_code = 0;          ///< CURLcode; 0 = the exchange completed (any HTTP status)
  std::string curl_error;     ///< libcurl's text for curl_code
  long status = 0;            ///< HTTP status of the last hop (0 when none arrived)
  std::vector<Headers> hops;  ///< headers of each response, in order (redirects first)
  std::string body;           ///< body when no sink, or a non-2xx body (first 64 KiB)
  uint64_t body_bytes = 0;    ///< bytes of the final body received (sink or not)
  bool write_failed = false;  ///< the sink returned false
  std::string host;           ///< host[:port] of the last hop, for messages
  /// The body passed HttpRequest::max_body_bytes; the transfer was stopped there.
  bool body_too_large = false;

  /// Header of the first hop that has it ("" when none).
  std::string header(const std::string& lower_name) const;
  /// Header of the last hop ("" when none).
  std::string last_header(const std::string& lower_name) const;
};

/// Performs the request. Never throws for network or HTTP failures (they are in the reply);
/// throws dllm::Error only when libcurl cannot be initialised.
HttpReply http_get(const HttpRequest& req);

/// "127.0.0.1:8080" or "huggingface.co" from a URL.
std::string url_host(const std::string& url);

/// Percent-encodes everything but unreserved characters and '/'.
std::string url_path_escape(const std::string& s);

}  // namespace dllm::hub
