// GET /metrics: Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats)
// of the HTTP counters and the engine's (engine::EngineMetrics). Names: docs/serving.md.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "engine/engine.h"

namespace dllm::server {

/// HTTP responses by route and status. Thread-safe.
class HttpCounters {
 public:
  void count(const std::string& route, int status);
  std::map<std::pair<std::string, int>, int64_t> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> counts_;
};

/// The connection layer's numbers (connection.h GuardedServer).
struct ConnectionCounts {
  int open = 0;          ///< connections being served now
  int64_t rejected = 0;  ///< answered 503 at once: --max-connections were open
};

/// The whole /metrics body. `engine` is empty while the model loads.
std::string prometheus_text(const HttpCounters& http, const std::optional<engine::EngineMetrics>& engine,
                            bool model_loaded, const ConnectionCounts& connections = {});

}  // namespace dllm::server
