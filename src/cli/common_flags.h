// Flags shared by the commands that load a model (run, tokenize, logits): declared once here so their
// names, help texts and checks stay identical everywhere.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace dllm::cli {

struct ModelFlags {
  std::string model;     ///< --model/-m: path or org/repo[:QUANT]
  bool offline = false;  ///< --offline (or HF_HUB_OFFLINE=1): hub cache only
};

struct ComputeFlags {
  int threads = 0;  ///< --threads/-t: 0 = physical cores
  std::string isa;  ///< --isa: "" = best for this CPU ($DLLM_CPU_ISA overrides)
};

void add_model_flags(CLI::App& sub, ModelFlags& f);
void add_compute_flags(CLI::App& sub, ComputeFlags& f);

/// True when --offline was given or HF_HUB_OFFLINE is set to something other than "" / "0".
bool offline_requested(const ModelFlags& f);

}  // namespace dllm::cli
