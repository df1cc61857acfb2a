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
#include <thread>

#include "base/error.h"
#include "server/canvas_event.h"
#include "server/openai_format.h"
#include "server/props.h"
#include "server/stop_strings.h"
#include "server/webui.h"

namespace dllm::server {

namespace {

using Clock = std::chrono::steady_clock;

/// The routes and their one method each (HEAD is served wherever GET is).
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/v1/chat/completions", "POST"},
                             {"/v1/completions", "POST"},
                             {"/v1/models", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"},
                             {"/apply-template", "POST"},
                             {"/props", "GET"},
                             {"/", "GET"}};

/// The route of `path`; "/" (the web page) only when it is served.
const Route* find_route(const std::string& path, bool webui) {
  for (const Route& r : kRoutes) {
    if (path == r.path && (webui || path != "/")) return &r;
  }
  return nullptr;
}

/// The web page's policy: everything it uses is inline in the page itself and it talks only to this
/// server, so a browser refuses any other host (and any injected script) outright.
constexpr const char* kWebuiPolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

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

HttpServer::HttpServer(HttpOptions options)
    : options_(std::move(options)), svr_(std::make_unique<httplib::Server>()) {
  started_ = unix_now();
  const int threads = std::max(4, options_.threads);
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr_->set_payload_max_length(options_.max_body_bytes);
  // Idle keep-alive connections hold a thread each; a short wait lets stop() return quickly.
  svr_->set_keep_alive_timeout(2);
  svr_->set_read_timeout(30, 0);
  svr_->set_write_timeout(30, 0);
  if (options_.verbose) {
    svr_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
      std::fprintf(stderr, "dllm serve: %s %s %d (%zu bytes in, %s)\n", req.method.c_str(), req.path.c_str(),
                   res.status, req.body.size(), req.remote_addr.c_str());
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

void HttpServer::routes() {
  httplib::Server& s = *svr_;

  // Before any handler and before the body is read: unknown route (404), wrong method (405), key (401).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const Route* route = find_route(req.path, options_.webui);
    if (!route) {
      send_error(res, route_not_found(req.method, req.path));
      counters_.count("other", res.status);
      return httplib::Server::HandlerResponse::Handled;
    }
    const bool method_ok =
        req.method == route->method || (req.method == "HEAD" && std::string(route->method) == "GET");
    if (!method_ok) {
      res.set_header("Allow", route->method);
      send_error(res, method_not_allowed(req.method, req.path, route->method));
      counters_.count(route->path, res.status);
      return httplib::Server::HandlerResponse::Handled;
    }
    // /health is for load balancers; / is the page, which asks for the key itself.
    if (!options_.api_key.empty() && req.path != "/health" && req.path != "/") {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      const bool given = !auth.empty();
      const bool ok = auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
                      same_key(auth.substr(prefix.size()), options_.api_key);
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, unauthorized(given));
        counters_.count(route->path, res.status);
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // Statuses httplib sets itself (413 body too large, 400 unreadable request line): an error JSON.
  s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                  httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 413) {
      send_error(res, body_too_large(options_.max_body_bytes));
    } else if (res.status == 404) {
      send_error(res, route_not_found(req.method, req.path));
    } else {
      send_error(res, {res.status, "the request could not be read (HTTP " + std::to_string(res.status) + ")",
                       "invalid_request_error", "", "bad_request", std::nullopt});
    }
    counters_.count(find_route(req.path, options_.webui) ? req.path : "other", res.status);
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
    counters_.count(find_route(req.path, options_.webui) ? req.path : "other", res.status);
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
      res.set_content(R"({"status":"ok"})", "application/json");
    }
    counters_.count("/health", res.status);
  });

  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(models_body(options_.model_id, started_), "application/json");
    counters_.count("/v1/models", res.status == -1 ? 200 : res.status);
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
    res.set_content(prometheus_text(counters_, em, m != nullptr), "text/plain; version=0.0.4");
    counters_.count("/metrics", 200);
  });

  // llama.cpp's server route: the prompt text a chat request would feed (no generation).
  s.Post("/apply-template", [this](const httplib::Request& req, httplib::Response& res) {
    const auto m = model();
    if (!m) {
      send_error(res, model_loading());
    } else {
      auto parsed = parse_generation_request(Endpoint::kChat, req.body, options_.model_id);
      if (auto* e = std::get_if<ApiError>(&parsed)) {
        send_error(res, *e);
      } else {
        tokenizer::ChatOptions chat;
        chat.messages = std::get<GenerationRequest>(parsed).messages;
        chat.parse_special = m->parse_special;
        nlohmann::json j = {{"prompt", tokenizer::render_chat(*m->tok, chat)}};
        res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
      }
    }
    counters_.count("/apply-template", res.status == -1 ? 200 : res.status);
  });

  auto generation = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      const char* route = endpoint == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
      serve_generation(endpoint, req, res);
      counters_.count(route, res.status == -1 ? 200 : res.status);
    };
  };
  s.Post("/v1/chat/completions", generation(Endpoint::kChat));
  s.Post("/v1/completions", generation(Endpoint::kCompletion));
}

void HttpServer::serve_generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  if (shutting_down_) return send_error(res, shutting_down());
  const auto m = model();
  if (!m) {
    std::lock_guard<std::mutex> lock(mu_);
    return send_error(
        res, failed_.empty() ? model_loading() : internal_error("the model failed to load: " + failed_));
  }
  auto parsed = parse_generation_request(endpoint, req.body, options_.model_id);
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
