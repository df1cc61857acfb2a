// What one `dllm run` did, gathered while it runs and printed at the end: as one JSON object (--json)
// or as the closing lines of --verbose on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dllm::cli {

struct RunReport {
  std::string model_path;
  std::string arch;       ///< "llada" | "dream"
  std::string quant_mix;  ///< "F32 x21, Q4_K x25, Q6_K x5"
  std::string device;     ///< "cpu" | "gpu"
  std::string isa;        ///< kernel path that ran: CPU ISA or GPU GEMM
  int threads = 0;
  uint64_t seed = 0;
  std::string sampler;                 ///< one line: schedule and its parameters
  std::vector<int32_t> prompt_tokens;  ///< ids fed before the canvas
  std::vector<int32_t> generated;      ///< final canvas after the prompt (mask ids where never filled)
  std::vector<int32_t> answer;         ///< ids of the printed text (up to the first end token)
  std::string text;                    ///< the printed text (valid UTF-8)
  int64_t max_tokens = 0;
  int64_t steps_run = 0;
  int64_t steps_planned = 0;
  bool stopped_early = false;
  bool ended_with_end_token = false;
  double load_ms = 0;              ///< open + bind weights + tokenizer + prepare matrices
  double tokenize_ms = 0;          ///< chat template + BPE
  std::vector<double> step_ms;     ///< per step: forward + sampling
  std::vector<double> forward_ms;  ///< per step: the forward pass alone
  double generate_ms = 0;          ///< the whole denoising loop
  double total_ms = 0;             ///< process start of the command to the end
  uint64_t peak_rss_bytes = 0;
  std::vector<std::string> warnings;
};

/// The --json object: {"text", "tokens" (answer ids), "generated", "prompt_tokens", "n_prompt_tokens",
/// "steps_run", "steps_planned", "stopped_early", "ended_with_end_token", "timings": {"load_ms",
/// "tokenize_ms", "step_ms": [...], "forward_ms": [...], "generate_ms", "total_ms"}, "peak_rss_bytes",
/// "model", "arch", "quant_mix", "device", "isa", "threads", "seed", "sampler", "max_tokens", "warnings"},
/// one line.
std::string report_json(const RunReport& r);

/// The --verbose closing lines (stderr): steps, total, ms per step, peak RSS.
void print_verbose_summary(const RunReport& r);

}  // namespace dllm::cli
