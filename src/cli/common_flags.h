// Flags shared by the commands that load a model (run, tokenize, logits): declared once here so their
// names, help texts and checks stay identical everywhere.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace dllm::cli {

struct ModelFlags {
  std::string model;     ///< --model/-m: path or org/repo[:QUANT]
  bool offline = false;  ///< --offline (or HF_HUB_OFFLINE=1): hub cache only
};

struct ComputeFlags {
  int threads = 0;                ///< --threads/-t: 0 = physical cores
  std::string isa;                ///< --isa: "" = $DLLM_CPU_ISA if set, else the best for this CPU
  std::string device = "cpu";     ///< --device: cpu | gpu | auto
  std::string gpu_gemm = "int8";  ///< --gpu-gemm: int8 | cublas
};

void add_model_flags(CLI::App& sub, ModelFlags& f);

/// Validators with messages that name the rule, e.g. "must be a whole number >= 1, got 'abc'"
/// (CLI11 prefixes the flag name). `min_exclusive` makes the lower bound strict: (min, max].
CLI::Validator whole_number(int64_t min);
CLI::Validator real_number(double min, double max, bool min_exclusive = false);
void add_compute_flags(CLI::App& sub, ComputeFlags& f);

/// The largest --threads accepted: 4 x logical_cpus(). More threads than that cannot help (each one
/// gets at most a quarter of a core and every parallel region waits for the slowest), so a bigger
/// number is a typo; a fixed cap such as 1024 would still let "--threads 1000" through on a 2-CPU machine.
int max_threads();

/// The warning for a --threads above the logical CPU count (within max_threads()): one line naming
/// the flag, the value and the CPU count; empty when `threads` <= logical_cpus() (0 = automatic).
std::string threads_warning(int threads);

/// True when --offline was given or HF_HUB_OFFLINE is set to something other than "" / "0".
bool offline_requested(const ModelFlags& f);

}  // namespace dllm::cli
