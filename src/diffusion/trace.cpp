// --trace writer: one JSON line per step.
#include "diffusion/trace.h"

#include <cmath>
#include <cstdio>

namespace dllm::diffusion {

namespace {

template <typename T>
void append_ints(std::string& s, std::span<const T> v) {
  s += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  s += ']';
}

void append_number(std::string& s, double x, const char* fmt) {
  if (!std::isfinite(x)) {
    s += "null";  // JSON has no inf/nan
    return;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, fmt, x);
  s += buf;
}

}  // namespace

std::string TraceWriter::format(const StepInfo& info) {
  std::string s = "{\"step\":" + std::to_string(info.step) + ",\"block\":" + std::to_string(info.block);
  s += ",\"positions\":";
  append_ints(s, info.positions);
  s += ",\"tokens\":";
  append_ints(s, info.tokens);
  s += ",\"confidences\":[";
  for (size_t i = 0; i < info.confidences.size(); ++i) {
    if (i) s += ',';
    append_number(s, info.confidences[i], "%.9g");
  }
  s += "],\"masks_left\":" + std::to_string(info.masks_left);
  s += ",\"forward_ms\":";
  append_number(s, info.forward_ms, "%.3f");
  s += ",\"sample_ms\":";
  append_number(s, info.sample_ms, "%.3f");
  s += ",\"cache_refresh\":";
  s += info.cache == CacheMode::kNone ? "\"none\"" : info.cache_refresh ? "\"full\"" : "\"window\"";
  s += '}';
  return s;
}

void TraceWriter::write(const StepInfo& info) {
  file_.write(format(info) + "\n");
}

}  // namespace dllm::diffusion
