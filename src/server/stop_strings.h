// OpenAI's `stop`: the answer ends before the first occurrence of any stop string. The final text
// arrives in pieces (the stable prefix of a diffusion canvas grows step by step), so a piece that ends
// with the beginning of a stop string is held back until the next piece says whether the stop string
// follows (what llama.cpp's server does with find_partial_stop_string).
#pragma once

#include <string>
#include <vector>

namespace dllm::server {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  /// Appends final text; returns the text that may be sent now (before any stop string, and not a
  /// possible start of one). After a stop string is found, stopped() is true and push returns "".
  std::string push(const std::string& piece);
  /// The end of the answer: returns the held-back text (no stop string followed it).
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

/// `text` cut before the first occurrence of any of `stops`; `*found` says whether one occurred.
std::string cut_at_stop(const std::string& text, const std::vector<std::string>& stops, bool* found);

}  // namespace dllm::server
