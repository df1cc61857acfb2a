// See version.h. build_info.h is generated at build time (cmake/build_info.cmake).
#include "cli/version.h"

#include "base/isa.h"
#include "build_info.h"

namespace dllm::cli {

std::string version_line() {
  return std::string("dllm ") + DLLM_VERSION + " (commit " + DLLM_GIT_COMMIT + ")";
}

bool cuda_built() {
  return DLLM_CUDA_TARGETS[0] != '\0';
}

std::string cuda_build_line() {
  if (!cuda_built()) return "cuda: not built (this dllm runs on the CPU only)";
  return std::string("cuda: ") + DLLM_CUDA_TARGETS;
}

std::string version_text() {
  return version_line() + "\n" + describe_default_isa() + "\n" + cuda_build_line() + "\n";
}

}  // namespace dllm::cli
