// Progress bar for downloads (see progress.h).
#include "hub/progress.h"

#include <cstdio>

namespace dllm::hub {

std::string human_bytes(uint64_t n) {
  char buf[64];
  if (n >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / double(1ull << 30));
  } else if (n >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", n / double(1ull << 20));
  } else if (n >= (1ull << 10)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / double(1ull << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  }
  return buf;
}

ProgressBar::ProgressBar(bool enabled, std::string label, uint64_t total_bytes, uint64_t start_bytes)
    : enabled_(enabled),
      label_(std::move(label)),
      total_(total_bytes),
      start_(start_bytes),
      done_(start_bytes),
      t0_(std::chrono::steady_clock::now()),
      last_draw_(t0_) {}

std::string ProgressBar::render(const std::string& label, uint64_t done, uint64_t total, double rate) {
  char buf[256];
  int pct = total ? static_cast<int>(100.0 * done / total) : 0;
  std::string eta = "--:--";
  if (rate > 0 && total >= done) {
    uint64_t s = static_cast<uint64_t>((total - done) / rate + 0.5);
    char e[32];
    if (s >= 3600) {
      std::snprintf(e, sizeof e, "%llu:%02llu:%02llu", (unsigned long long)(s / 3600),
                    (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60));
    } else {
      std::snprintf(e, sizeof e, "%llu:%02llu", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
    }
    eta = e;
  }
  std::string rate_s = rate > 0 ? human_bytes(static_cast<uint64_t>(rate)) + "/s" : "-- B/s";
  std::snprintf(buf, sizeof buf, "  %s  %3d%%  %s / %s  %s  ETA %s", label.c_str(), pct,
                human_bytes(done).c_str(), human_bytes(total).c_str(), rate_s.c_str(), eta.c_str());
  return buf;
}

void ProgressBar::draw(bool final) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  // Mid-way, wait 0.2 s before quoting a rate (the first chunk arrives in a burst).
  double rate = (final ? secs > 0 : secs > 0.2) ? (done_ - start_) / secs : 0;
  std::string line = render(label_, done_, total_, rate);
  if (final) {
    // The finished line says how long it took instead of an ETA.
    char took[48];
    std::snprintf(took, sizeof took, "in %.1f s", secs);
    line = line.substr(0, line.rfind("ETA ")) + took;
  }
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::update(uint64_t done_bytes) {
  done_ = done_bytes;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw(false);
}

void ProgressBar::finish() {
  if (!enabled_) return;
  draw(true);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace dllm::hub
