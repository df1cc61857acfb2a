// Profile (forward_profile.h).
#include "cpu/forward_profile.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

namespace dllm::cpu {

namespace {

constexpr const char* kPhaseNames[] = {"embedding",     "self-cond probs", "self-cond gemm", "add+norm+q8",
                                       "q8_K quantize", "gemm q/k/v",      "bias+rope",      "kv cache",
                                       "attention",     "gemm o",          "gemm gate/up",   "silu*up+q8",
                                       "gemm down",     "moe ffn",         "gemm lm head"};
static_assert(std::size(kPhaseNames) == static_cast<size_t>(Phase::kCount));

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Profile::Profile() {
  const char* env = std::getenv("DLLM_PROFILE");
  on = env != nullptr && env[0] != '\0' && std::string(env) != "0";
  if (on) set_traffic_counting(true);
  const char* rows = std::getenv("DLLM_PROFILE_ROWS");
  if (on && rows != nullptr && *rows != '\0') {
    char* end = nullptr;
    const long long n = std::strtoll(rows, &end, 10);
    if (*end == '\0' && n > 0) {
      only_rows = n;
    } else {
      std::fprintf(stderr, "warning: DLLM_PROFILE_ROWS='%s' is not a positive row count: timing every pass\n",
                   rows);
    }
  }
}

bool Profile::begin_pass(int64_t rows) {
  timing = only_rows == 0 || rows == only_rows;
  if (timing) ++forwards;
  if (on) passes.push_back({rows, traffic_totals()});
  return on && timing;
}

void Profile::print() const {
  if (!on || forwards == 0) return;
  double wall = 0, cpu = 0;
  for (size_t i = 0; i < wall_s.size(); ++i) {
    wall += wall_s[i];
    cpu += cpu_s[i];
  }
  const double per = 1e3 / static_cast<double>(forwards);
  if (only_rows > 0)
    std::fprintf(stderr, "profile note: timing only the passes of %lld rows (DLLM_PROFILE_ROWS)\n",
                 static_cast<long long>(only_rows));
  std::fprintf(stderr, "profile: %lld forward passes; per pass:\n%-14s %10s %6s %10s %6s\n",
               static_cast<long long>(forwards), "phase", "wall ms", "wall%", "cpu ms", "cpu%");
  for (size_t i = 0; i < wall_s.size(); ++i) {
    std::fprintf(stderr, "%-14s %10.1f %6.1f %10.1f %6.1f\n", kPhaseNames[i], wall_s[i] * per,
                 100.0 * wall_s[i] / wall, cpu_s[i] * per, 100.0 * cpu_s[i] / cpu);
  }
  std::fprintf(stderr, "%-14s %10.1f %6.1f %10.1f %6.1f\n", "total", wall * per, 100.0, cpu * per, 100.0);
  // A pass's traffic is the counters' growth until the next pass begins (the last: until now).
  const Traffic now = traffic_totals();
  for (size_t i = 0; i < passes.size(); ++i) {
    const Traffic& a = passes[i].start;
    const Traffic& b = i + 1 < passes.size() ? passes[i + 1].start : now;
    std::fprintf(stderr, "profile pass %zu: rows %lld, weight bytes %llu, multiply-adds %llu\n", i,
                 static_cast<long long>(passes[i].rows),
                 static_cast<unsigned long long>(b.weight_bytes - a.weight_bytes),
                 static_cast<unsigned long long>(b.macs - a.macs));
  }
}

void Profile::Scope::start() {
  wall0_ = wall_now();
  cpu0_ = cpu_now();
}

void Profile::Scope::stop() {
  p_->wall_s[static_cast<size_t>(phase_)] += wall_now() - wall0_;
  p_->cpu_s[static_cast<size_t>(phase_)] += cpu_now() - cpu0_;
}

}  // namespace dllm::cpu
