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

void append_numbers(std::string& s, std::span<const float> v) {
  s += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    append_number(s, v[i], "%.9g");
  }
  s += ']';
}

}  // namespace

std::string TraceWriter::format(const StepInfo& info) {
  std::string s = "{\"step\":" + std::to_string(info.step) + ",\"block\":" + std::to_string(info.block);
  s += ",\"positions\":";
  append_ints(s, info.positions);
  s += ",\"tokens\":";
  append_ints(s, info.tokens);
  s += ",\"confidences\":";
  append_numbers(s, info.confidences);
  s += ",\"masks_left\":" + std::to_string(info.masks_left);
  s += ",\"forward_ms\":";
  append_number(s, info.forward_ms, "%.3f");
  s += ",\"sample_ms\":";
  append_number(s, info.sample_ms, "%.3f");
  s += ",\"cache_refresh\":";
  s += info.cache == CacheMode::kNone ? "\"none\"" : info.cache_refresh ? "\"full\"" : "\"window\"";
  s += '}';
  return s;
}

std::string TraceWriter::format_eb(const EbStepInfo& info, double forward_ms) {
  std::string s = "{\"block\":" + std::to_string(info.block) + ",\"step\":" + std::to_string(info.step) +
                  ",\"cur_step\":" + std::to_string(info.cur_step) + ",\"t\":";
  append_number(s, info.t, "%.9g");
  s += ",\"input_canvas\":";
  append_ints(s, info.input_canvas);
  s += ",\"argmax\":";
  append_ints(s, info.argmax);
  s += ",\"sampled\":";
  append_ints(s, info.sampled);
  s += ",\"accepted\":[";
  bool first = true;
  for (size_t i = 0; i < info.accepted.size(); ++i) {
    if (!info.accepted[i]) continue;
    if (!first) s += ',';
    s += std::to_string(i);
    first = false;
  }
  s += "],\"entropy\":";
  append_numbers(s, info.entropy);
  s += ",\"u\":";
  append_numbers(s, info.u);
  s += ",\"renoise\":";
  append_ints(s, info.renoise);
  s += ",\"mean_entropy\":";
  append_number(s, info.mean_entropy, "%.9g");
  s += info.stop ? ",\"stop\":true" : ",\"stop\":false";
  s += ",\"forward_ms\":";
  append_number(s, forward_ms, "%.3f");
  s += '}';
  return s;
}

void TraceWriter::write(const EbStepInfo& info, double forward_ms) {
  file_.write(format_eb(info, forward_ms) + "\n");
}

void TraceWriter::write(const StepInfo& info) {
  file_.write(format(info) + "\n");
}

}  // namespace dllm::diffusion
