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
  std::string isa;                ///< --isa: "" = best for this CPU ($DLLM_CPU_ISA overrides)
  std::string device = "cpu";     ///< --device: cpu | gpu | auto
  std::string gpu_gemm = "int8";  ///< --gpu-gemm: int8 | cublas
};

void add_model_flags(CLI::App& sub, ModelFlags& f);

/// Validators with messages that name the rule, e.g. "must be a whole number >= 1, got 'abc'"
/// (CLI11 prefixes the flag name). `min_exclusive` makes the lower bound strict: (min, max].
CLI::Validator whole_number(int64_t min);
CLI::Validator real_number(double min, double max, bool min_exclusive = false);
void add_compute_flags(CLI::App& sub, ComputeFlags& f);

/// True when --offline was given or HF_HUB_OFFLINE is set to something other than "" / "0".
bool offline_requested(const ModelFlags& f);

}  // namespace dllm::cli
