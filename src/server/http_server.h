// `dllm serve`'s HTTP side: one route table (cpp-httplib) over the engine. Every handler's failure
// becomes an OpenAI error JSON (api_error.h); the routes and what they answer: docs/serving.md.
//
// Lifecycle: bind() (the port is taken at once, so /health answers 503 while the model loads), run()
// on a thread of its own, set_ready() once the model and engine exist, begin_shutdown() when SIGTERM
// or Ctrl-C arrives (new generation requests get 503; the engine's shutdown ends the running ones,
// whose clients get an error response or error event), stop() to close the listener and join the
// connection threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/metrics.h"
#include "server/prepare.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace dllm::server {

class GuardedServer;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      ///< 0: any free port (bind() returns it)
  std::string api_key;  ///< non-empty: every route but /health and / needs Authorization: Bearer <api_key>
  size_t max_body_bytes = 1 << 20;  ///< larger request bodies get 413, whatever their framing
  std::string model_id;             ///< the name /v1/models lists and requests may send
  int max_connections = 52;         ///< served at once (connection.h); --parallel + --queue + 32
  double request_timeout_s = 15;    ///< a request's line, headers and body must arrive within this
  /// Origins a browser page may call from (CORS), besides http(s)://localhost, 127.0.0.1 and [::1]
  /// on any port; "*" allows any origin.
  std::vector<std::string> cors_origins;
  bool verbose = false;  ///< one stderr line per request (method, path, status, ms)
  bool webui = true;     ///< GET / serves the web page (webui.h); false: --no-webui, 404
};

class HttpServer {
 public:
  explicit HttpServer(HttpOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds host:port; returns the port. Throws dllm::Error naming the address when it is taken.
  int bind();
  /// Serves until stop(); call on a thread of its own after bind(). Returns at once when stop()
  /// came first.
  void run();
  /// The model is loaded: generation routes start answering and /health says 200.
  void set_ready(std::shared_ptr<const ModelContext> model);
  /// Loading failed: /health and generation routes answer 500 with `why`.
  void set_failed(const std::string& why);
  /// From now on generation routes answer 503 shutting_down.
  void begin_shutdown();
  /// Closes the listener and waits for the connection threads. Safe before, during or after run()
  /// from any thread: a stop() that comes while run() is still starting waits until the listener is
  /// up, then closes it (cpp-httplib's own stop() does nothing before its loop has started, which
  /// left `dllm serve` on a file that failed to load in accept() forever).
  void stop();

 private:
  void routes();
  void serve_generation(Endpoint endpoint, const std::string& body, httplib::Response& res);
  /// The Access-Control-Allow-Origin value for a request's Origin header ("" = none).
  std::string allowed_origin(const std::string& origin) const;
  std::shared_ptr<const ModelContext> model() const;

  HttpOptions options_;
  std::unique_ptr<GuardedServer> svr_;
  HttpCounters counters_;
  mutable std::mutex mu_;
  std::shared_ptr<const ModelContext> model_;
  std::string failed_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> stop_requested_{false};  ///< stop() was called
  std::atomic<bool> run_active_{false};      ///< run() is between its start and its return
  std::atomic<uint64_t> next_id_{1};
  int64_t started_ = 0;  ///< Unix seconds, the model list's `created`
};

}  // namespace dllm::server
