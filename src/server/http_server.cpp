// See http_server.h. The route table is routes(); generation requests go through
// serve_generation (non-streaming: wait for the job, answer once) or serve_stream (SSE: one chunk per
// step with the newly final text, written by a chunked content provider on the connection's thread
// while the engine's scheduler thread fills the queue it reads).
#include "server/http_server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>

#include "base/error.h"
#include "server/canvas_event.h"
#include "server/connection.h"
#include "server/openai_format.h"
#include "server/props.h"
#include "server/stop_strings.h"
#include "server/webui.h"

namespace dllm::server {

namespace {

using Clock = std::chrono::steady_clock;

/// The routes and their one method each (HEAD is served wherever GET is, OPTIONS everywhere for
/// CORS preflights). A route with `below` also matches every path under it (/v1/models/{id}); the
/// others match their path exactly (so a route "/" matches "/" alone).
struct Route {
  const char* path;
  const char* method;
  bool below = false;  ///< path + "{id}": any path that starts with `path`
};
constexpr Route kRoutes[] = {
    {"/v1/chat/completions", "POST"}, {"/v1/completions", "POST"}, {"/v1/models", "GET"},
    {"/v1/models/", "GET", true},     {"/health", "GET"},          {"/metrics", "GET"},
    {"/apply-template", "POST"},      {"/props", "GET"},           {"/", "GET"}};

/// The route of `path`; "/" (the web page) only when it is served (webui).
const Route* find_route(const std::string& path, bool webui) {
  if (!webui && path == "/") return nullptr;
  for (const Route& r : kRoutes) {
    const std::string_view p(r.path);
    if (path == p || (r.below && path.size() > p.size() && path.compare(0, p.size(), p) == 0)) return &r;
  }
  return nullptr;
}

/// The route table as the 404 message lists it: "POST /v1/chat/completions, ..., GET /v1/models/{id}".
std::string route_list(bool webui) {
  std::string out;
  for (const Route& r : kRoutes) {
    if (!webui && std::string_view(r.path) == "/") continue;
    out += (out.empty() ? "" : ", ") + std::string(r.method) + " " + r.path + (r.below ? "{id}" : "");
  }
  return out;
}

/// The counters' route label: the table's path (so /v1/models/x and /v1/models/y count as one).
std::string route_label(const std::string& path, bool webui) {
  const Route* r = find_route(path, webui);
  return r ? r->path : "other";
}

/// The web page's policy: everything it uses is inline in the page itself and it talks only to this
/// server, so a browser refuses any other host (and any injected script) outright.
constexpr const char* kWebuiPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// `Authorization: Bearer KEY` -> KEY; the scheme is case-insensitive (RFC 7235 section 2.1), and
/// "" when the header has another scheme or no key.
std::string bearer_token(const std::string& header) {
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size()) return "";
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return "";
  }
  if (header[scheme.size()] != ' ') return "";
  const size_t start = header.find_first_not_of(' ', scheme.size());
  return start == std::string::npos ? "" : header.substr(start);
}

/// The request says a body follows (RFC 9112 section 6.3: a Content-Length or a Transfer-Encoding).
bool has_body(const httplib::Request& req) {
  return req.has_header("Content-Length") || req.has_header("Transfer-Encoding");
}

/// A request's body framing checked before it is read: a Content-Length that is not a whole number
/// (400) or over the limit (413) is answered at once, and the body is never read.
std::optional<ApiError> check_length(const httplib::Request& req, size_t limit) {
  if (!req.has_header("Content-Length")) return std::nullopt;
  const std::string v = req.get_header_value("Content-Length");
  const bool digits = !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) {
    return ApiError{400,
                    "Content-Length must be a whole number of bytes, got '" + v.substr(0, 40) + "'",
                    "invalid_request_error",
                    "",
                    "bad_request",
                    std::nullopt};
  }
  if (std::stoull(v) > limit) return body_too_large(limit);
  return std::nullopt;
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.retry_after_s) res.set_header("Retry-After", std::to_string(*e.retry_after_s));
  res.set_content(error_body(e), "application/json");
}

/// Constant-time comparison, so the key cannot be guessed byte by byte from response times.
bool same_key(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The answer's text exactly as `dllm run` prints it (a StreamDecoder over every token, then flush).
std::string decode_answer(const tokenizer::Tokenizer& tok, std::span<const int32_t> ids) {
  tokenizer::StreamDecoder d(tok);
  std::string s;
  for (int32_t id : ids) s += d.push(id);
  return s + d.flush();
}

/// How many of `ids` it takes for the decoded text to reach `len` bytes (completion_tokens of an
/// answer cut at a stop string).
int64_t tokens_for_bytes(const tokenizer::Tokenizer& tok, std::span<const int32_t> ids, size_t len) {
  tokenizer::StreamDecoder d(tok);
  size_t have = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (have >= len) return static_cast<int64_t>(i);
    have += d.push(ids[i]).size();
  }
  return static_cast<int64_t>(ids.size());
}

/// What a finished job's status means for the client: nullopt when it produced an answer.
std::optional<ApiError> job_error(const engine::JobResult& r, bool stopped_by_us) {
  switch (r.status) {
    case engine::JobStatus::kOk:
      return std::nullopt;
    case engine::JobStatus::kCancelled:
      if (stopped_by_us) return std::nullopt;
      return ApiError{499,         "the request was cancelled", "invalid_request_error", "", "cancelled",
                      std::nullopt};
    case engine::JobStatus::kShutdown:
      return shutting_down();
    case engine::JobStatus::kFailed:
      return internal_error(r.error);
  }
  return internal_error("unknown job status");
}

/// State shared by a streaming job's on_step callback (the engine's scheduler thread) and the
/// content provider writing to the socket (the connection's thread).
struct StreamState {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> out;  ///< SSE frames ready to write
  bool stopped = false;         ///< a stop string ended the answer: cancel the job
  tokenizer::StreamDecoder decoder;
  StopMatcher stop;
  int64_t sent_tokens = 0;             ///< answer tokens already through the decoder
  bool first = true;                   ///< the next chunk is the first (chat: carries the role)
  std::string text;                    ///< the answer text sent so far
  std::vector<int32_t> canvas_before;  ///< canvas events: the answer region after the previous step
  StreamState(const tokenizer::Tokenizer& tok, std::vector<std::string> stops)
      : decoder(tok), stop(std::move(stops)) {}
};

}  // namespace

HttpServer::HttpServer(HttpOptions options) : options_(std::move(options)) {
  ConnectionLimits limits;
  limits.max_connections = options_.max_connections;
  limits.request_timeout_s = options_.request_timeout_s;
  svr_ = std::make_unique<GuardedServer>(limits);
  started_ = unix_now();
  if (options_.verbose) {
    svr_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "dllm serve: %s %s %d (%s)\n", req.method.c_str(), req.path.c_str(), res.status,
                   req.remote_addr.c_str());
    });
  }
  routes();
}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::bind() {
  if (options_.port == 0) {
    const int port = svr_->bind_to_any_port(options_.host);
    if (port < 0)
      throw Error("cannot listen on " + options_.host + ": no free port (or the address is not local)");
    return port;
  }
  if (!svr_->bind_to_port(options_.host, options_.port)) {
    throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                ": the port is in use or the address is not this machine's (pick another --port or --host)");
  }
  return options_.port;
}

void HttpServer::run() {
  // Dekker's pattern with stop(): each side writes its flag, then reads the other's (sequentially
  // consistent atomics), so either run() sees the stop and returns, or stop() sees run() active and
  // waits for the listener to close it.
  run_active_ = true;
  if (!stop_requested_) svr_->listen_after_bind();
  run_active_ = false;
}

void HttpServer::set_ready(std::shared_ptr<const ModelContext> model) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = std::move(model);
}

void HttpServer::set_failed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = why;
}

void HttpServer::begin_shutdown() {
  shutting_down_ = true;
}

void HttpServer::stop() {
  if (!svr_) return;
  stop_requested_ = true;
  while (run_active_ && !svr_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  svr_->stop();
}

std::shared_ptr<const ModelContext> HttpServer::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

std::string HttpServer::allowed_origin(const std::string& origin) const {
  if (origin.empty()) return "";
  for (const std::string& o : options_.cors_origins) {
    if (o == "*" || o == origin) return origin;
  }
  // This machine's pages (a web UI on another port) are allowed by default, as Ollama allows them.
  for (const char* local : {"http://localhost", "https://localhost", "http://127.0.0.1", "https://127.0.0.1",
                            "http://[::1]", "https://[::1]"}) {
    const std::string_view l(local);
    if (origin.compare(0, l.size(), l) == 0 && (origin.size() == l.size() || origin[l.size()] == ':'))
      return origin;
  }
  return "";
}

void HttpServer::routes() {
  GuardedServer& s = *svr_;

  // Before any handler and before the body is read: unknown route (404), wrong method (405), CORS
  // preflight, key (401), body length (400, 413). A refusal before the body is read closes the
  // connection after the answer (the unread body must not be taken for the next request).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto refuse = [&](const ApiError& e, const std::string& label) {
      send_error(res, e);
      counters_.count(label, res.status);
      if (auto* conn = Connection::current(); conn && has_body(req)) {
        res.set_header("Connection", "close");
        conn->close_after_response();
      }
      return httplib::Server::HandlerResponse::Handled;
    };
    const std::string origin = allowed_origin(req.get_header_value("Origin"));
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    const Route* route = find_route(req.path, options_.webui);
    if (!route) return refuse(route_not_found(req.method, req.path, route_list(options_.webui)), "other");
    if (req.method == "OPTIONS") {
      // A CORS preflight: it carries no key (browsers never send one), so it is answered before auth.
      if (origin.empty() && req.has_header("Origin")) {
        return refuse({403,
                       "the origin '" + req.get_header_value("Origin").substr(0, 100) +
                           "' may not call this server; start it with --cors-origin ORIGIN",
                       "invalid_request_error", "", "cors_origin_not_allowed", std::nullopt},
                      route->path);
      }
      res.status = 204;
      const std::string methods = std::string(route->method) + ", OPTIONS";
      res.set_header("Allow", methods);
      res.set_header("Access-Control-Allow-Methods", methods);
      res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
      res.set_header("Access-Control-Max-Age", "600");
      counters_.count(route->path, res.status);
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool method_ok =
        req.method == route->method || (req.method == "HEAD" && std::string(route->method) == "GET");
    if (!method_ok) {
      res.set_header("Allow", route->method);
      return refuse(method_not_allowed(req.method, req.path, route->method), route->path);
    }
    // /health is for load balancers; / is the page, which asks for the key itself.
    if (!options_.api_key.empty() && req.path != "/health" && req.path != "/") {
      const std::string auth = req.get_header_value("Authorization");
      if (!same_key(bearer_token(auth), options_.api_key)) {
        res.set_header("WWW-Authenticate", "Bearer");
        return refuse(unauthorized(!auth.empty()), route->path);
      }
    }
    if (auto e = check_length(req, options_.max_body_bytes)) return refuse(*e, route->path);
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Statuses httplib sets itself (400 unreadable request line or headers, 414): an error JSON; a
  // request whose deadline passed while it was read is a 408.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return httplib::Server::HandlerResponse::Unhandled;
    const Connection* conn = Connection::current();
    if (conn && conn->timed_out()) {
      send_error(res, request_timeout(options_.request_timeout_s));
    } else if (res.status == 413) {
      send_error(res, body_too_large(options_.max_body_bytes));
    } else if (res.status == 404) {
      send_error(res, route_not_found(req.method, req.path, route_list(options_.webui)));
    } else {
      send_error(res, {res.status, "the request could not be read (HTTP " + std::to_string(res.status) + ")",
                       "invalid_request_error", "", "bad_request", std::nullopt});
    }
    counters_.count(route_label(req.path, options_.webui), res.status);
    return httplib::Server::HandlerResponse::Handled;
  }));

  s.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, internal_error(what));
    counters_.count(route_label(req.path, options_.webui), res.status);
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    std::string failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed = failed_;
    }
    if (!failed.empty()) {
      send_error(res, internal_error("the model failed to load: " + failed));
    } else if (shutting_down_) {
      send_error(res, shutting_down());
    } else if (!model()) {
      res.status = 503;
      res.set_content(R"({"status":"loading model"})", "application/json");
    } else {
      res.status = 200;
      res.set_content(R"({"status":"ok"})", "application/json");
    }
    counters_.count("/health", res.status);
  });

  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(models_body(options_.model_id, started_), "application/json");
    counters_.count("/v1/models", res.status);
  });

  // The openai client's models.retrieve(id).
  s.Get("/v1/models/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    if (id == options_.model_id) {
      res.status = 200;
      res.set_content(model_body(options_.model_id, started_), "application/json");
    } else {
      send_error(res, {404,
                       "the model '" + id.substr(0, 200) + "' does not exist; this server serves '" +
                           options_.model_id + "'",
                       "invalid_request_error", "model", "model_not_found", std::nullopt});
    }
    counters_.count("/v1/models/", res.status);
  });

  s.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    const auto m = model();
    if (!m) {
      send_error(res, model_loading());
    } else {
      res.set_content(props_body(*m, options_.model_id), "application/json");
    }
    counters_.count("/props", res.status == -1 ? 200 : res.status);
  });

  if (options_.webui) {
    s.Get("/", [this](const httplib::Request&, httplib::Response& res) {
      res.set_header("Content-Security-Policy", kWebuiPolicy);
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Cache-Control", "no-cache");
      res.set_content(std::string(webui_page()), "text/html; charset=utf-8");
      counters_.count("/", 200);
    });
  }

  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const auto m = model();
    std::optional<engine::EngineMetrics> em;
    if (m) em = m->engine->metrics();
    ConnectionCounts cc{svr_->open_connections(), svr_->rejected_connections()};
    res.status = 200;
    res.set_content(prometheus_text(counters_, em, m != nullptr, cc), "text/plain; version=0.0.4");
    counters_.count("/metrics", res.status);
  });

  // The POST routes read their body themselves (httplib's ContentReader), counting bytes as they
  // arrive: a body over --max-body-bytes is refused at the limit, chunked or not, and never held.
  auto read_body = [this](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader, std::string& body) {
    if (!has_body(req)) return true;  // no body (RFC 9112 section 6.3): an empty one
    // Reserved once, so the body never exists twice while a growing buffer is copied: the memory a
    // request holds is its body, at most the limit (pages of the reserve are only used as filled).
    const size_t limit = options_.max_body_bytes;
    body.reserve(req.has_header("Content-Length")
                     ? std::min<size_t>(limit, std::stoull(req.get_header_value("Content-Length")))
                     : std::min<size_t>(limit, size_t{64} << 20));
    bool too_large = false;
    const bool ok = reader([&](const char* data, size_t n) {
      if (body.size() + n > limit) {
        too_large = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (ok) return true;
    Connection* conn = Connection::current();
    if (conn) conn->close_after_response();
    res.set_header("Connection", "close");
    if (too_large) {
      send_error(res, body_too_large(options_.max_body_bytes));
    } else if (conn && conn->timed_out()) {
      send_error(res, request_timeout(options_.request_timeout_s));
    } else {
      send_error(res, {400, "the request body could not be read (cut short, or bad chunked framing)",
                       "invalid_request_error", "", "bad_request", std::nullopt});
    }
    return false;
  };

  // llama.cpp's server route: the prompt text a chat request would feed (no generation).
  s.Post("/apply-template", [this, read_body](const httplib::Request& req, httplib::Response& res,
                                              const httplib::ContentReader& reader) {
    std::string body;
    const auto m = model();
    if (!read_body(req, res, reader, body)) {
    } else if (!m) {
      send_error(res, model_loading());
    } else {
      auto parsed = parse_generation_request(Endpoint::kChat, body, options_.model_id);
      if (auto* e = std::get_if<ApiError>(&parsed)) {
        send_error(res, *e);
      } else {
        tokenizer::ChatOptions chat;
        chat.messages = std::get<GenerationRequest>(parsed).messages;
        const GenerationRequest& g = std::get<GenerationRequest>(parsed);
        chat.parse_special = g.no_special ? !*g.no_special : m->parse_special;
        nlohmann::json j = {{"prompt", tokenizer::render_chat(*m->tok, chat)}};
        res.status = 200;
        res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
      }
    }
    counters_.count("/apply-template", res.status);
  });

  auto generation = [this, read_body](Endpoint endpoint) {
    return [this, endpoint, read_body](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& reader) {
      const char* route = endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
      std::string body;
      if (read_body(req, res, reader, body)) serve_generation(endpoint, body, res);
      counters_.count(route, res.status == -1 ? 200 : res.status);
    };
  };
  s.Post("/v1/chat/completions", generation(Endpoint::kChat));
  s.Post("/v1/completions", generation(Endpoint::kCompletion));
}

void HttpServer::serve_generation(Endpoint endpoint, const std::string& body, httplib::Response& res) {
  if (shutting_down_) return send_error(res, shutting_down());
  const auto m = model();
  if (!m) {
    std::lock_guard<std::mutex> lock(mu_);
    return send_error(
        res, failed_.empty() ? model_loading() : internal_error("the model failed to load: " + failed_));
  }
  auto parsed = parse_generation_request(endpoint, body, options_.model_id);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
  const GenerationRequest r = std::move(std::get<GenerationRequest>(parsed));
  auto prepared = prepare_request(r, *m);
  if (auto* e = std::get_if<ApiError>(&prepared)) return send_error(res, *e);
  PreparedRequest p = std::move(std::get<PreparedRequest>(prepared));

  Completion c;
  c.id = (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + std::to_string(started_) + "-" +
         std::to_string(next_id_++);
  c.model = options_.model_id;
  c.created = unix_now();
  c.prompt_tokens = p.n_prompt;
  c.seed = p.seed;
  c.warnings = p.warnings;
  if (options_.verbose) {
    for (const std::string& w : p.warnings)
      std::fprintf(stderr, "dllm serve: %s: note: %s\n", c.id.c_str(), w.c_str());
  }
  res.set_header("X-Dllm-Seed", std::to_string(p.seed));

  std::shared_ptr<StreamState> st;
  std::function<void(const engine::StepEvent&)> on_step;
  const tokenizer::Tokenizer& tok = *m->tok;
  if (r.stream) {
    st = std::make_shared<StreamState>(tok, r.stop);
    const int32_t mask_id = p.spec.params.mask_id;
    const bool canvas = r.canvas_events;
    on_step = [st, endpoint, c, &tok, mask_id, canvas](const engine::StepEvent& ev) {
      std::lock_guard<std::mutex> lock(st->mu);
      bool wrote = false;
      std::string piece;
      for (;
           st->sent_tokens < ev.stable_answer_len && st->sent_tokens < static_cast<int64_t>(ev.answer.size());
           ++st->sent_tokens) {
        piece += st->decoder.push(ev.answer[st->sent_tokens]);
      }
      if (!piece.empty() && !st->stopped) {
        const std::string delta = st->stop.push(piece);
        if (st->stop.stopped()) st->stopped = true;
        if (!delta.empty()) {
          st->out.push_back(sse(chunk_body(endpoint, c, delta, st->first, "")));
          st->first = false;
          st->text += delta;
          wrote = true;
        }
      }
      if (canvas && !ev.canvas.empty()) {
        std::vector<int32_t> committed;
        for (int32_t pos : ev.committed) committed.push_back(static_cast<int32_t>(pos - ev.prompt_len));
        CanvasStep cs;
        cs.id = c.id;
        cs.step = ev.step;
        cs.step_ms = ev.step_ms;
        cs.answer = ev.canvas.subspan(static_cast<size_t>(ev.prompt_len));
        cs.before = st->canvas_before;
        cs.committed = committed;
        cs.block_begin = ev.block_begin - ev.prompt_len;
        cs.block_end = ev.block_end - ev.prompt_len;
        cs.mask_id = mask_id;
        st->out.push_back(sse(canvas_event_body(cs, tok), "canvas"));
        st->canvas_before.assign(cs.answer.begin(), cs.answer.end());
        wrote = true;
      }
      // An SSE comment when nothing else went out: every step writes, so a client that has gone
      // is noticed (the write fails) and its job cancelled within a step or two.
      if (!wrote) st->out.push_back(": step " + std::to_string(ev.step) + "\n\n");
      st->cv.notify_all();
    };
  }

  std::shared_ptr<engine::Job> job;
  try {
    job = m->engine->submit(std::move(p.spec), on_step);
  } catch (const engine::QueueFull& e) {
    const auto em = m->engine->metrics();
    ApiError err = queue_full(static_cast<int>(em.active), static_cast<int>(em.queue_depth),
                              static_cast<int>(std::max<int64_t>(1, e.retry_after_s())));
    return send_error(res, err);
  } catch (const UsageError& e) {
    return send_error(res, invalid_request(e.what()));
  } catch (const std::exception& e) {
    return send_error(res, shutting_down_ ? shutting_down() : internal_error(e.what()));
  }

  if (!r.stream) {
    // Nothing is written while the job runs, so a client that gives up (its timeout, Ctrl-C) is
    // noticed by polling its socket between waits; its job is cancelled rather than run to the end.
    const Connection* conn = Connection::current();
    while (!job->done()) {
      if (conn && conn->client_gone()) {
        job->cancel();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const engine::JobResult result = job->wait();
    if (auto err = job_error(result, false)) return send_error(res, *err);
    bool found = false;
    const std::string full = decode_answer(tok, result.gen.answer);
    c.text = cut_at_stop(full, r.stop, &found);
    c.completion_tokens = found ? tokens_for_bytes(tok, result.gen.answer, c.text.size())
                                : static_cast<int64_t>(result.gen.answer.size());
    c.finish_reason = found || result.gen.ended_with_end_token ? "stop" : "length";
    c.steps = result.gen.steps_run;
    res.set_content(completion_body(endpoint, c), "application/json");
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // nginx: pass each event on at once
  const bool include_usage = r.include_usage;
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, job, endpoint, c, &tok, include_usage](size_t, httplib::DataSink& sink) mutable {
        auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        for (;;) {
          std::deque<std::string> frames;
          bool stopped = false;
          {
            std::unique_lock<std::mutex> lock(st->mu);
            st->cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return !st->out.empty(); });
            frames.swap(st->out);
            stopped = st->stopped;
          }
          for (const std::string& f : frames) {
            if (!write(f)) {
              job->cancel();  // the client has gone
              return false;
            }
          }
          if (stopped) job->cancel();  // a stop string ended the answer: the rest is not needed
          if (job->done() && frames.empty()) {
            std::lock_guard<std::mutex> lock(st->mu);
            if (st->out.empty()) break;
          }
        }
        const engine::JobResult result = job->wait();
        std::lock_guard<std::mutex> lock(st->mu);
        if (auto err = job_error(result, st->stopped)) {
          write(sse(error_body(*err)));
          write("data: [DONE]\n\n");
          sink.done();
          return true;
        }
        // The rest of the answer: final now that the job has ended.
        std::string piece;
        if (!st->stopped) {
          for (; st->sent_tokens < static_cast<int64_t>(result.gen.answer.size()); ++st->sent_tokens) {
            piece += st->decoder.push(result.gen.answer[st->sent_tokens]);
          }
          piece += st->decoder.flush();
          std::string delta = st->stop.push(piece);
          if (st->stop.stopped()) st->stopped = true;
          delta += st->stop.finish();
          st->text += delta;
          if (!delta.empty() && !write(sse(chunk_body(endpoint, c, delta, st->first, "")))) return false;
          if (!delta.empty()) st->first = false;
        }
        c.finish_reason = st->stopped || result.gen.ended_with_end_token ? "stop" : "length";
        c.completion_tokens = st->stopped ? tokens_for_bytes(tok, result.gen.answer, st->text.size())
                                          : static_cast<int64_t>(result.gen.answer.size());
        c.steps = result.gen.steps_run;
        if (!write(sse(chunk_body(endpoint, c, "", st->first, c.finish_reason)))) return false;
        if (include_usage && !write(sse(usage_chunk_body(endpoint, c)))) return false;
        write("data: [DONE]\n\n");
        sink.done();
        return true;
      },
      [job](bool) { job->cancel(); });
}

}  // namespace dllm::server
