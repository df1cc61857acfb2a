// See run_report.h.
#include "cli/run_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/isa.h"
#include "cli/util.h"

namespace dllm::cli {

std::string report_json(const RunReport& r) {
  nlohmann::ordered_json j;
  j["text"] = r.text;
  j["tokens"] = r.answer;
  j["generated"] = r.generated;
  j["prompt_tokens"] = r.prompt_tokens;
  j["n_prompt_tokens"] = r.prompt_tokens.size();
  j["max_tokens"] = r.max_tokens;
  j["steps_run"] = r.steps_run;
  j["steps_planned"] = r.steps_planned;
  j["stopped_early"] = r.stopped_early;
  j["ended_with_end_token"] = r.ended_with_end_token;
  j["timings"] = {{"load_ms", r.load_ms},       {"tokenize_ms", r.tokenize_ms}, {"step_ms", r.step_ms},
                  {"forward_ms", r.forward_ms}, {"generate_ms", r.generate_ms}, {"total_ms", r.total_ms}};
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  j["model"] = r.model_path;
  j["arch"] = r.arch;
  j["quant_mix"] = r.quant_mix;
  j["device"] = r.device;
  j["isa"] = r.isa;
  // Whether the AMX tile path ran, or why not (base/isa.h).
  if (r.device == "cpu") j["amx"] = amx_status(r.isa == "amx" ? Isa::kAmx : Isa::kScalar);
  j["threads"] = r.threads;
  j["seed"] = r.seed;
  j["sampler"] = r.sampler;
  j["warnings"] = r.warnings;
  // The text is already valid UTF-8 (StreamDecoder::flush replaces bad bytes); `replace` guards the
  // paths and warnings too, so dump() can never throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void print_verbose_summary(const RunReport& r) {
  double sum = 0;
  for (double ms : r.step_ms) sum += ms;
  const double per_step = r.step_ms.empty() ? 0 : sum / static_cast<double>(r.step_ms.size());
  std::fprintf(stderr, "steps: %lld run of %lld planned%s\n", static_cast<long long>(r.steps_run),
               static_cast<long long>(r.steps_planned),
               r.stopped_early ? " (stopped early: answer final)" : "");
  std::fprintf(stderr, "generate: %.1f ms (%.1f ms/step)\n", r.generate_ms, per_step);
  std::fprintf(stderr, "total: %.1f ms (load %.1f ms, tokenize %.1f ms)\n", r.total_ms, r.load_ms,
               r.tokenize_ms);
  std::fprintf(stderr, "peak RSS: %s\n", format_bytes(r.peak_rss_bytes).c_str());
}

}  // namespace dllm::cli
