// Traffic counters (traffic.h): process-wide relaxed atomics.
#include "cpu/traffic.h"

#include <atomic>

namespace dllm::cpu {

namespace {
std::atomic<bool> g_on{false};
std::atomic<uint64_t> g_bytes{0}, g_macs{0};
}  // namespace

void set_traffic_counting(bool on) {
  g_on.store(on, std::memory_order_relaxed);
}

bool traffic_counting() {
  return g_on.load(std::memory_order_relaxed);
}

void count_traffic(uint64_t weight_bytes, uint64_t macs) {
  g_bytes.fetch_add(weight_bytes, std::memory_order_relaxed);
  g_macs.fetch_add(macs, std::memory_order_relaxed);
}

Traffic traffic_totals() {
  return {g_bytes.load(std::memory_order_relaxed), g_macs.load(std::memory_order_relaxed)};
}

}  // namespace dllm::cpu
