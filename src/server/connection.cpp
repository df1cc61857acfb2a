// See connection.h.
#include "server/connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "server/api_error.h"

namespace dllm::server {

namespace {

using Clock = std::chrono::steady_clock;

thread_local Connection* tl_connection = nullptr;
thread_local bool tl_over_cap = false;  ///< the accepting thread runs this connection to refuse it

int ms_until(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

/// poll() for `events` until `deadline`, in slices of at most 100 ms so a stopping server is noticed
/// (`stopped`). Returns the revents, 0 on timeout or stop.
short wait_for(int fd, short events, Clock::time_point deadline, const std::function<bool()>& stopped) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ms = std::min(ms_until(deadline), 100);
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return p.revents;
    if (n < 0 && errno != EINTR) return POLLERR;
    if (Clock::now() >= deadline || (stopped && stopped())) return 0;
  }
}

/// Writes all of `s` or gives up at `deadline`; false when the client did not take it.
bool send_all(int fd, const char* p, size_t n, Clock::time_point deadline) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (!(wait_for(fd, POLLOUT, deadline, nullptr) & POLLOUT)) return false;
  }
  return true;
}

/// After a response that left request bytes unread: stop sending, then read and discard for up to
/// `seconds` (or until the client closes), so closing does not reset the connection before the
/// client has read the answer (a reset can discard it in the client's buffer). Nothing is kept.
void lingering_close(int fd, double seconds) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = after(seconds);
  char buf[4096];
  while (wait_for(fd, POLLIN, deadline, nullptr) & (POLLIN | POLLHUP | POLLERR)) {
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) break;
  }
}

}  // namespace

/// httplib::Stream over the connection's socket, with a buffered read that gives up at the
/// request's deadline (not per byte, as httplib's own SocketStream does).
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(Connection& conn, const ConnectionLimits& limits) : conn_(conn), limits_(limits) {}

  /// A new request starts: its line, headers and body must arrive by `deadline`.
  void arm(Clock::time_point deadline) {
    deadline_ = deadline;
    written_ = 0;
    conn_.timed_out_ = false;
    conn_.close_after_ = false;
  }
  /// Bytes already read from the socket and not yet consumed (a pipelined request).
  bool buffered() const { return pos_ < len_; }
  /// The next byte to be read, waiting for it until the deadline; -1 when none came.
  int peek() {
    if (!buffered() && !fill(deadline_)) return -1;
    return static_cast<unsigned char>(buf_[pos_]);
  }
  size_t written() const { return written_; }

  bool is_readable() const override { return buffered() || Clock::now() < deadline_; }
  bool is_writable() const override { return true; }

  ssize_t read(char* ptr, size_t size) override {
    if (!buffered() && !fill(deadline_)) return -1;
    const size_t n = std::min(size, len_ - pos_);
    std::copy(buf_ + pos_, buf_ + pos_ + n, ptr);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!send_all(conn_.fd_, ptr, size, after(limits_.write_timeout_s))) return -1;
    written_ += size;
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(false, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(true, ip, port); }
  socket_t socket() const override { return conn_.fd_; }

 private:
  /// Reads what the socket has (at least one byte) into the buffer; false at EOF, on an error or at
  /// `deadline` (then the connection is marked timed out).
  bool fill(Clock::time_point deadline) {
    pos_ = len_ = 0;
    for (;;) {
      const ssize_t n = ::recv(conn_.fd_, buf_, sizeof buf_, MSG_DONTWAIT);
      if (n > 0) {
        len_ = static_cast<size_t>(n);
        return true;
      }
      if (n == 0) return false;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      if (!wait_for(conn_.fd_, POLLIN, deadline, nullptr)) {
        conn_.timed_out_ = deadline == deadline_;
        return false;
      }
    }
  }

  void address(bool local, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int rc = local ? ::getsockname(conn_.fd_, reinterpret_cast<sockaddr*>(&addr), &len)
                         : ::getpeername(conn_.fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    ip.clear();
    port = 0;
    if (rc != 0) return;
    char host[64] = {};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    }
    ip = host;
  }

  Connection& conn_;
  const ConnectionLimits& limits_;
  Clock::time_point deadline_ = Clock::now();
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
  size_t written_ = 0;
};

namespace {

/// httplib's TaskQueue for accepted connections: a thread per connection up to `max` (started on
/// demand, kept for the next), and a connection beyond `max` run at once on the accepting thread
/// with tl_over_cap set, so GuardedServer answers it 503 instead of letting it wait unanswered.
class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(int max) : max_(std::max(1, max)) {}
  ~ConnectionPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (pending_ < max_) {
        ++pending_;
        jobs_.push_back(std::move(fn));
        if (static_cast<int>(jobs_.size()) > idle_ && static_cast<int>(threads_.size()) < max_)
          threads_.emplace_back([this] { work(); });
        cv_.notify_one();
        return;
      }
    }
    tl_over_cap = true;
    fn();
    tl_over_cap = false;
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stop_ and nothing left
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
      --pending_;
    }
  }

  const int max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  int pending_ = 0;  ///< connections queued or being served
  int idle_ = 0;     ///< threads waiting for a connection
  bool stop_ = false;
};

}  // namespace

Connection* Connection::current() {
  return tl_connection;
}

bool Connection::client_gone() const {
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char c;
  return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

std::string raw_json_response(int status, const std::string& reason, const std::string& json_body,
                              const std::string& extra_headers) {
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(json_body.size()) +
         "\r\nConnection: close\r\n" + extra_headers + "\r\n" + json_body;
}

GuardedServer::GuardedServer(ConnectionLimits limits) : limits_(limits) {
  const int max = limits_.max_connections;
  new_task_queue = [max] { return new ConnectionPool(max); };
  // The connection loop below replaces httplib's timeouts; these only bound the accept socket's
  // SO_RCVTIMEO/SO_SNDTIMEO, which our non-blocking reads and writes do not use.
  set_keep_alive_max_count(static_cast<size_t>(std::max(1, limits_.keep_alive_max_requests)));
  set_keep_alive_timeout(static_cast<time_t>(std::max(1.0, limits_.keep_alive_s)));  // the Keep-Alive header
}

void GuardedServer::reject(socket_t sock) {
  ++rejected_;
  const ApiError e = too_many_connections(limits_.max_connections);
  const std::string r = raw_json_response(503, "Service Unavailable", error_body(e), "Retry-After: 1\r\n");
  // Whatever request bytes have arrived are read and dropped first, so closing does not reset the
  // connection under the answer; the accepting thread waits for nothing.
  char buf[4096];
  while (::recv(sock, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  send_all(sock, r.data(), r.size(), Clock::now());
  ::shutdown(sock, SHUT_WR);
  ::close(sock);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (tl_over_cap) {
    reject(sock);
    return false;
  }
  ++open_;
  Connection conn(sock);
  tl_connection = &conn;
  DeadlineStream strm(conn, limits_);
  auto stopped = [this] { return svr_sock_ == INVALID_SOCKET; };
  bool ret = false;
  for (int left = std::max(1, limits_.keep_alive_max_requests); left > 0 && !stopped(); --left) {
    // The next request's first byte, within the keep-alive wait; its deadline counts from there.
    if (!strm.buffered() && !(wait_for(sock, POLLIN, after(limits_.keep_alive_s), stopped) & POLLIN)) break;
    strm.arm(after(limits_.request_timeout_s));
    const int first = strm.peek();
    if (first < 0) break;  // closed by the client
    if (first == 0x16) {   // a TLS handshake record: this port speaks plain HTTP
      const std::string r = raw_json_response(400, "Bad Request", error_body(tls_on_plain_http()));
      strm.write(r.data(), r.size());
      conn.close_after_response();
      break;
    }
    bool connection_closed = false;
    ret = process_request(strm, left == 1, connection_closed, nullptr);
    if (conn.timed_out() && strm.written() == 0) {
      // The request line itself never ended: httplib wrote nothing, so answer here.
      const std::string r =
          raw_json_response(408, "Request Timeout", error_body(request_timeout(limits_.request_timeout_s)));
      strm.write(r.data(), r.size());
      break;
    }
    if (!ret || connection_closed || conn.close_after_ || conn.timed_out()) break;
  }
  if (conn.close_after_) lingering_close(sock, 1.0);
  tl_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  --open_;
  return ret;
}

}  // namespace dllm::server
