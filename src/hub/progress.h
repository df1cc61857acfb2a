// Download progress bar on stderr: "  file.gguf  45%  9.7 MiB / 21.6 MiB  12.3 MiB/s  ETA 0:02".
// Redrawn in place with '\r' at most 10 times a second; the caller decides whether to draw at all
// (HubOptions::progress: stderr is a terminal, or forced).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace dllm::hub {

/// "1.23 GiB", "456.0 MiB", "789 B".
std::string human_bytes(uint64_t n_bytes);

class ProgressBar {
 public:
  /// `label` is shown first; `total_bytes` the full size; `start_bytes` what a resumed file already has
  /// (not counted in the rate).
  ProgressBar(bool enabled, std::string label, uint64_t total_bytes, uint64_t start_bytes);
  /// Total bytes now on disk.
  void update(uint64_t done_bytes);
  /// Final redraw (average rate and time taken instead of the ETA) and newline.
  void finish();

  /// One line of text at `rate_bytes_per_s` (0: not known yet), ETA = bytes left / rate (exposed for tests).
  static std::string render(const std::string& label, uint64_t done_bytes, uint64_t total_bytes,
                            double rate_bytes_per_s);

 private:
  bool enabled_;
  std::string label_;
  uint64_t total_, start_, done_ = 0;
  std::chrono::steady_clock::time_point t0_, last_draw_;
  bool drawn_ = false;
  void draw(bool final);
};

}  // namespace dllm::hub
