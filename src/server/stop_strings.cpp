// See stop_strings.h.
#include "server/stop_strings.h"

#include <algorithm>

namespace dllm::server {

std::string cut_at_stop(const std::string& text, const std::vector<std::string>& stops, bool* found) {
  size_t cut = std::string::npos;
  for (const auto& s : stops) {
    if (s.empty()) continue;
    cut = std::min(cut, text.find(s));
  }
  if (found) *found = cut != std::string::npos;
  return cut == std::string::npos ? text : text.substr(0, cut);
}

std::string StopMatcher::push(const std::string& piece) {
  if (stopped_) return "";
  std::string buf = held_ + piece;
  bool found = false;
  std::string before = cut_at_stop(buf, stops_, &found);
  if (found) {
    stopped_ = true;
    held_.clear();
    return before;
  }
  // Hold back the longest suffix of buf that is a proper prefix of a stop string. A stop string is
  // valid UTF-8 (JSON text), so such a suffix starts at a character boundary.
  size_t hold = 0;
  for (const auto& s : stops_) {
    for (size_t len = std::min(s.size() - 1, buf.size()); len > hold; --len) {
      if (buf.compare(buf.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  held_ = buf.substr(buf.size() - hold);
  buf.resize(buf.size() - hold);
  return buf;
}

std::string StopMatcher::finish() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? "" : rest;
}

}  // namespace dllm::server
