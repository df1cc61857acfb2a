// See metrics.h.
#include "server/metrics.h"

#include <cstdio>
#include <limits>

namespace dllm::server {

void HttpCounters::count(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[{route, status}];
}

std::map<std::pair<std::string, int>, int64_t> HttpCounters::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void metric(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string prometheus_text(const HttpCounters& http, const std::optional<engine::EngineMetrics>& e,
                            bool model_loaded, const ConnectionCounts& c) {
  std::string out;
  metric(out, "dllm_model_loaded", "gauge", "1 once the model is loaded and requests are served");
  out += "dllm_model_loaded " + std::string(model_loaded ? "1" : "0") + "\n";
  metric(out, "dllm_http_requests_total", "counter", "HTTP responses by route and status");
  for (const auto& [key, n] : http.snapshot()) {
    out += "dllm_http_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
           "\"} " + std::to_string(n) + "\n";
  }
  metric(out, "dllm_http_connections", "gauge", "connections being served now (--max-connections)");
  out += "dllm_http_connections " + std::to_string(c.open) + "\n";
  metric(out, "dllm_http_connections_rejected_total", "counter",
         "connections answered 503 at once because --max-connections were open");
  out += "dllm_http_connections_rejected_total " + std::to_string(c.rejected) + "\n";
  if (!e) return out;
  metric(out, "dllm_requests_total", "counter", "generation jobs by outcome");
  const std::pair<const char*, int64_t> outcomes[] = {{"submitted", e->requests_submitted},
                                                      {"rejected", e->requests_rejected},
                                                      {"ok", e->requests_ok},
                                                      {"cancelled", e->requests_cancelled},
                                                      {"failed", e->requests_failed},
                                                      {"shutdown", e->requests_shutdown}};
  for (const auto& [what, n] : outcomes) {
    out += "dllm_requests_total{outcome=\"" + std::string(what) + "\"} " + std::to_string(n) + "\n";
  }
  metric(out, "dllm_queue_depth", "gauge", "jobs waiting for a canvas slot");
  out += "dllm_queue_depth " + std::to_string(e->queue_depth) + "\n";
  metric(out, "dllm_active_canvases", "gauge", "jobs being denoised now");
  out += "dllm_active_canvases " + std::to_string(e->active) + "\n";
  metric(out, "dllm_forward_passes_total", "counter", "forward passes (a packed batch counts once)");
  out += "dllm_forward_passes_total " + std::to_string(e->forward_passes) + "\n";
  metric(out, "dllm_sequence_steps_total", "counter", "denoising steps of all jobs (a batch of 4 counts 4)");
  out += "dllm_sequence_steps_total " + std::to_string(e->sequence_steps) + "\n";
  metric(out, "dllm_tokens_committed_total", "counter", "canvas positions committed, all jobs");
  out += "dllm_tokens_committed_total " + std::to_string(e->tokens_committed) + "\n";
  metric(out, "dllm_step_seconds", "histogram",
         "scheduler step latency (one batched forward and its sampling)");
  for (size_t i = 0; i < e->step_ms_bounds.size() && i < e->step_ms_buckets.size(); ++i) {
    const double b = e->step_ms_bounds[i];
    const std::string le = b == std::numeric_limits<double>::infinity() ? "+Inf" : num(b / 1000.0);
    out += "dllm_step_seconds_bucket{le=\"" + le + "\"} " + std::to_string(e->step_ms_buckets[i]) + "\n";
  }
  out += "dllm_step_seconds_sum " + num(e->step_ms_sum / 1000.0) + "\n";
  out += "dllm_step_seconds_count " + std::to_string(e->step_ms_count) + "\n";
  return out;
}

}  // namespace dllm::server
