// The socket side of `dllm serve`: cpp-httplib's Server (Debian 12's 0.11) with its connection loop
// replaced, so that one client cannot hold the server.
//
// What cpp-httplib 0.11 does alone, and why this file exists (docs/serving.md, "Running it for
// others"): its read timeout is per recv, so a client that trickles one byte a second holds a
// connection thread forever; its thread pool queues connections beyond its size without answering;
// a Content-Length over the limit (or a negative one, read as 2^64 - 5) makes it read and discard
// that many bytes; a chunked body has no limit at all; a TLS ClientHello waits for a line end that
// never comes. httplib::Server::process_request (protected) parses one request from any
// httplib::Stream, and process_and_close_socket (virtual) is where a connection is served, so
// GuardedServer keeps httplib's parser and routing and owns only the connection:
//   - a whole-request deadline: the request line, headers and body must all arrive within
//     request_timeout_s of the request's first byte (408 otherwise), however slowly they trickle;
//   - a connection cap: at most max_connections are served at once, each on a thread of its own;
//     one more is answered 503 too_many_connections at once, on the accepting thread, and closed;
//   - a first byte of 0x16 (a TLS handshake record) is answered 400 at once and closed;
//   - a response that leaves an unread body (413, a refused length) closes the connection after a
//     short lingering drain (as nginx's lingering_close), so the client reads the answer, not a reset;
//   - Connection::client_gone() tells a handler that waits on a job whether its client has gone.
// Request bodies are read by the routes through httplib's ContentReader (http_server.cpp), which
// counts bytes as they arrive and stops at --max-body-bytes whatever the framing.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace dllm::server {

struct ConnectionLimits {
  int max_connections = 52;         ///< served at once (one thread each); beyond: 503 at once
  double request_timeout_s = 15;    ///< request line + headers + body, from the first byte; 408 after
  double keep_alive_s = 2;          ///< an idle connection waits this long for its next request
  double write_timeout_s = 30;      ///< one write may wait this long for the client to read
  int keep_alive_max_requests = 5;  ///< requests per connection before it is closed
};

/// The connection the calling thread serves (GuardedServer sets it around each connection), so a
/// route handler can ask about its socket. Not thread-safe beyond that one thread.
class Connection {
 public:
  /// The calling thread's connection, or nullptr outside GuardedServer's connection threads.
  static Connection* current();

  /// True when the client closed its side or reset the connection (a poll, no wait). A client that
  /// half-closes after its request counts as gone, as nginx counts it (499).
  bool client_gone() const;
  /// The response being written ends the connection: its request body was not read to its end.
  void close_after_response() { close_after_ = true; }
  /// The request's deadline passed while it was being read (the route answers 408).
  bool timed_out() const { return timed_out_; }

 private:
  friend class GuardedServer;
  friend class DeadlineStream;
  explicit Connection(int fd) : fd_(fd) {}
  int fd_;
  bool close_after_ = false;
  bool timed_out_ = false;
};

/// httplib::Server with the connection loop above. Set routes as on httplib::Server; its read and
/// write timeouts and thread pool are replaced by `limits`.
class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);

  int open_connections() const { return open_; }
  int64_t rejected_connections() const { return rejected_; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  /// 503 on the accepting thread: the connection cap is reached.
  void reject(socket_t sock);

  ConnectionLimits limits_;
  std::atomic<int> open_{0};
  std::atomic<int64_t> rejected_{0};
};

/// A complete HTTP/1.1 response with a JSON body and `Connection: close` (the answers written
/// outside httplib: 503 over the cap, 400 to TLS, 408 to a request line that never ended).
std::string raw_json_response(int status, const std::string& reason, const std::string& json_body,
                              const std::string& extra_headers = "");

}  // namespace dllm::server
