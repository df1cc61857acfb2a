// See common_flags.h.
#include "cli/common_flags.h"

#include <cstdlib>

namespace dllm::cli {

void add_model_flags(CLI::App& sub, ModelFlags& f) {
  sub.add_option("-m,--model", f.model,
                 "GGUF file, or Hugging Face repo org/repo[:QUANT] (downloaded to the HF cache)");
  sub.add_flag("--offline", f.offline, "Use the local Hugging Face cache only (also HF_HUB_OFFLINE=1)");
}

void add_compute_flags(CLI::App& sub, ComputeFlags& f) {
  sub.add_option("-t,--threads", f.threads, "CPU threads (0: one per physical core)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(0);
  sub.add_option("--isa", f.isa,
                 "CPU kernel path: scalar, avx2, avxvnni, avx512vnni (default: best this CPU runs)")
      ->check(CLI::IsMember({"auto", "scalar", "ref", "avx2", "avxvnni", "avx512vnni", "avx512"}));
}

bool offline_requested(const ModelFlags& f) {
  if (f.offline) return true;
  const char* env = std::getenv("HF_HUB_OFFLINE");
  return env && *env && std::string(env) != "0";
}

}  // namespace dllm::cli
