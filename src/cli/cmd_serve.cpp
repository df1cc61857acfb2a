// `dllm serve`: an OpenAI-compatible HTTP server over one model (src/server, docs/serving.md). The
// port is bound first and the model loads behind it (/health answers 503 until it is ready);
// SIGINT/SIGTERM end the running requests with an error, close the port and exit 0.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/loaded_model.h"
#include "cli/model_source.h"
#include "cli/vocab_checks.h"
#include "engine/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace dllm::cli {

namespace {

struct ServeFlags {
  ModelFlags model;
  ComputeFlags compute;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 4;
  int queue = 16;
  std::string api_key;
  std::string alias;
  int64_t ctx_size = 4096;
  int64_t max_body_bytes = 1 << 20;
  int max_connections = 0;  // 0: parallel + queue + 32
  double request_timeout = 15;
  std::vector<std::string> cors_origins;
  bool no_special = false;
  bool verbose = false;
  bool no_webui = false;
  // Request defaults: `run`'s flags (a request's fields override them).
  int64_t max_tokens = 64;
  int64_t steps = 0;
  int64_t block_length = 32;
  double temperature = 0;
  uint64_t seed = 0;
  std::string remasking, alg, cache;
  double alg_temp = 0, top_p = 1, cfg_scale = 0, threshold = 0;
  int64_t top_k = 0;
};

/// The name /v1/models lists: --alias, else a path's file name without .gguf, else the repo spec.
std::string model_id(const ServeFlags& f) {
  if (!f.alias.empty()) return f.alias;
  const std::filesystem::path p(f.model.model);
  if (p.extension() == ".gguf") return p.stem().string();
  return f.model.model;
}

int run_serve(ServeFlags& f, const CLI::App& sub) {
  auto given = [&](const char* name) { return sub.get_option(name)->count() > 0; };
  if (f.model.model.empty())
    throw UsageError("serve needs --model (a .gguf path, org/repo or org/repo:QUANT)");
  // An empty key would turn authentication off without a word: refuse it (also from the environment).
  if (given("--api-key") && f.api_key.empty())
    throw UsageError("--api-key is empty: give a key, or leave the flag out to serve without one");
  if (!given("--api-key")) {
    if (const char* k = std::getenv("DLLM_API_KEY")) {
      if (*k == '\0')
        throw UsageError("DLLM_API_KEY is set but empty: give a key, or unset it to serve without one");
      f.api_key = k;
    }
  }
  const int max_connections = f.max_connections > 0 ? f.max_connections : f.parallel + f.queue + 32;
  if (max_connections < f.parallel + f.queue + 2) {
    throw UsageError(
        "--max-connections " + std::to_string(max_connections) + " leaves no room beside --parallel " +
        std::to_string(f.parallel) + " and --queue " + std::to_string(f.queue) + ": give at least " +
        std::to_string(f.parallel + f.queue + 2) +
        " (every running or waiting request holds a connection; /health and /metrics need more)");
  }

  // Request defaults from the run flags; only the given ones are set, so per-architecture defaults
  // apply to the rest exactly as in `dllm run`.
  engine::SamplerOptions defaults;
  defaults.max_tokens = f.max_tokens;
  if (given("--steps")) defaults.steps = f.steps;
  if (given("--block-length")) defaults.block_length = f.block_length;
  defaults.temperature = f.temperature;
  defaults.seed = f.seed;  // used only when --seed is given: else each request gets a fresh seed
  if (given("--remasking")) defaults.remasking = f.remasking;
  if (given("--alg")) defaults.alg = f.alg;
  if (given("--alg-temp")) defaults.alg_temp = f.alg_temp;
  if (given("--top-p")) defaults.top_p = f.top_p;
  if (given("--top-k")) defaults.top_k = f.top_k;
  if (given("--threshold")) defaults.threshold = f.threshold;
  defaults.cfg_scale = f.cfg_scale;
  defaults.cache = f.cache;
  defaults.isa = choose_isa(f.compute.isa);

  server::HttpOptions ho;
  ho.host = f.host;
  ho.port = f.port;
  ho.api_key = f.api_key;
  ho.max_body_bytes = static_cast<size_t>(f.max_body_bytes);
  ho.model_id = model_id(f);
  ho.max_connections = max_connections;
  ho.request_timeout_s = f.request_timeout;
  ho.cors_origins = f.cors_origins;
  ho.verbose = f.verbose;
  ho.webui = !f.no_webui;

  // Every thread started from here on inherits the blocked set: SIGINT/SIGTERM arrive only through
  // sigwait on the signal thread below, never in the middle of a handler or the scheduler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not the end of the server

  server::HttpServer http(ho);
  const int port = http.bind();
  std::fprintf(stderr, "dllm serve: listening on http://%s:%d (model %s loading)\n", f.host.c_str(), port,
               ho.model_id.c_str());
  std::thread http_thread([&] { http.run(); });

  // The engine lives in this scope; the signal thread reaches it through this pointer once it exists.
  std::mutex mu;
  engine::Engine* running = nullptr;
  bool stopping = false;
  bool self_stop = false;  // the load failed and this thread ends the signal thread: no "stopping" line
  int caught = 0;
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    bool quiet = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      quiet = self_stop;
    }
    if (!quiet) {
      caught = sig;
      std::fprintf(stderr, "dllm serve: %s: stopping (running requests end with an error)\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM");
    }
    http.begin_shutdown();
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
      if (running) running->shutdown();
    }
    http.stop();
  });

  std::unique_ptr<engine::Engine> engine;
  LoadedModel m;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  try {
    const std::string path = resolve_model(f.model.model, offline_requested(f.model));
    m = load_model(path);
    tok = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(*m.file));
    const model::ModelConfig& cfg = m.model->config();
    for (const std::string& w : check_vocab_keys(*m.file, *tok, cfg.arch_name))
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    engine::EngineOptions eo;
    eo.parallel = f.parallel;
    eo.queue = f.queue;
    eo.device = f.compute.device;
    eo.gpu_gemm = f.compute.gpu_gemm;
    eo.threads = f.compute.threads;
    eo.isa = f.compute.isa;
    eo.max_canvas = cfg.n_ctx_train > 0 ? std::min<int64_t>(cfg.n_ctx_train, f.ctx_size) : f.ctx_size;
    if (eo.max_canvas < f.ctx_size && given("--ctx-size")) {
      std::fprintf(stderr,
                   "warning: --ctx-size %lld is longer than the model's context of %lld tokens; using %lld\n",
                   static_cast<long long>(f.ctx_size), static_cast<long long>(eo.max_canvas),
                   static_cast<long long>(eo.max_canvas));
    }
    engine = std::make_unique<engine::Engine>(*m.model, eo);
    auto ctx = std::make_shared<server::ModelContext>();
    ctx->tok = tok.get();
    ctx->config = &cfg;
    ctx->engine = engine.get();
    ctx->defaults = defaults;
    ctx->parse_special = !f.no_special;
    ctx->max_canvas = eo.max_canvas;
    ctx->fresh_seed = !given("--seed");
    {
      std::lock_guard<std::mutex> lock(mu);
      running = engine.get();
      if (stopping) engine->shutdown();
    }
    http.set_ready(ctx);
    for (const std::string& n : engine->notes()) std::fprintf(stderr, "note: %s\n", n.c_str());
    std::fprintf(stderr, "dllm serve: ready: %s (%s), %s, %d parallel, queue %d, context %lld\n",
                 ho.model_id.c_str(), cfg.arch_name.c_str(), engine->describe().c_str(), f.parallel, f.queue,
                 static_cast<long long>(eo.max_canvas));
    if (ho.webui) std::fprintf(stderr, "dllm serve: web page: http://%s:%d/\n", f.host.c_str(), port);
  } catch (const std::exception& e) {
    // The port stays open so /health reports the failure; the process ends with the error.
    http.set_failed(e.what());
    http.stop();
    http_thread.join();
    {
      std::lock_guard<std::mutex> lock(mu);
      self_stop = true;
    }
    pthread_kill(signal_thread.native_handle(), SIGTERM);
    signal_thread.join();
    throw;
  }
  http_thread.join();
  signal_thread.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    running = nullptr;
  }
  engine->shutdown();
  std::fprintf(stderr, "dllm serve: stopped; port %d released\n", port);
  return caught != 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command add_serve_command(CLI::App& root) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = root.add_subcommand(
      "serve", "Serve the model over HTTP with OpenAI's API (/v1/chat/completions, /v1/completions)");
  add_model_flags(*sub, f->model);
  add_compute_flags(*sub, f->compute);
  sub->add_option("--host", f->host, "Address to listen on (127.0.0.1: this machine only)")
      ->capture_default_str();
  sub->add_option("--port", f->port, "TCP port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--parallel", f->parallel, "Requests denoised together (canvases per batched step)")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("--queue", f->queue,
                  "Requests that may wait beyond --parallel; more get 503 with Retry-After")
      ->check(whole_number(0))
      ->capture_default_str();
  sub->add_option("--api-key", f->api_key,
                  "Require 'Authorization: Bearer KEY' on every route but /health and the page at / (also "
                  "DLLM_API_KEY; not "
                  "empty)");
  sub->add_option("--alias", f->alias, "Model name for /v1/models and requests (default: the file name)");
  sub->add_option("-c,--ctx-size", f->ctx_size,
                  "Longest canvas (prompt + max_tokens); a longer one than the model's context is cut to it, "
                  "with a warning")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("--max-body-bytes", f->max_body_bytes,
                  "Larger request bodies get 413, chunked or not; reading stops at the limit")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("--max-connections", f->max_connections,
                  "Connections served at once (one thread each); more are answered 503 at once "
                  "(default: --parallel + --queue + 32)")
      ->check(whole_number(1));
  sub->add_option("--request-timeout", f->request_timeout,
                  "Seconds a request's line, headers and body may take to arrive, from its first byte; "
                  "408 after")
      ->check(real_number(0, 3600, true))
      ->capture_default_str();
  sub->add_option("--cors-origin", f->cors_origins,
                  "An origin whose web pages may call the server (repeatable; * for any); this "
                  "machine's (localhost, 127.0.0.1, [::1], any port) always may")
      ->type_name("ORIGIN")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_flag("--no-special", f->no_special, "Treat control-token text in messages as plain text");
  sub->add_flag("-v,--verbose", f->verbose, "Log every request to stderr");
  sub->add_flag("--no-webui", f->no_webui, "Do not serve the web page at / (404 instead)");
  // The defaults of a request's fields: the same flags as `dllm run`.
  sub->add_option("-n,--max-tokens", f->max_tokens,
                  "Default max_tokens: masks in the canvas after the prompt")
      ->check(whole_number(1))
      ->capture_default_str();
  sub->add_option("-s,--steps", f->steps, "Default steps (default: max_tokens)")->check(whole_number(1));
  sub->add_option("--block-length", f->block_length, "Default block_length (LLaDA)")->check(whole_number(1));
  sub->add_option("--temperature,--temp", f->temperature, "Default temperature")
      ->check(real_number(0, kInf))
      ->capture_default_str();
  sub->add_option("--seed", f->seed,
                  "Seed of requests that send none (default: a fresh random seed per request, reported "
                  "in the response's dllm.seed and X-Dllm-Seed)")
      ->check(whole_number(0));
  sub->add_option("--remasking", f->remasking, "Default remasking (LLaDA)")
      ->check(CLI::IsMember({"low_confidence", "random"}));
  sub->add_option("--alg", f->alg, "Default alg (Dream)")
      ->check(CLI::IsMember({"origin", "maskgit_plus", "topk_margin", "entropy"}));
  sub->add_option("--alg-temp", f->alg_temp, "Default alg_temp (Dream)")->check(real_number(0, kInf));
  sub->add_option("--top-p", f->top_p, "Default top_p (Dream)")->check(real_number(0, 1, true));
  sub->add_option("--top-k", f->top_k, "Default top_k (Dream)")->check(whole_number(0));
  sub->add_option("--threshold", f->threshold,
                  "Default threshold in (0, 1] (Fast-dLLM: a step also commits every masked position whose "
                  "confidence is at least this)")
      ->check(real_number(0, 1, true));
  sub->add_option("--cfg-scale", f->cfg_scale, "Default cfg_scale (LLaDA)")->check(real_number(0, kInf));
  sub->add_option("--cache", f->cache,
                  "Default cache: none | prefix | dual | exact (default: exact for llada2, else none)")
      ->check(CLI::IsMember({"none", "prefix", "dual", "exact"}));
  return {sub, [f, sub]() { return run_serve(*f, *sub); }};
}

}  // namespace dllm::cli
