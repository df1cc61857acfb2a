// What `dllm --version` prints: which build this binary is (version, commit, CUDA) and which CPU
// kernel path it runs here.
#pragma once

#include <string>

namespace dllm::cli {

/// "dllm 0.1.0 (commit 39f7d25ab12c)": the project version and the commit the sources were at when
/// the binary was built ("-dirty" when tracked files had changes, "unknown" outside git).
std::string version_line();

/// True when this binary has the CUDA backend (DLLM_CUDA was on).
bool cuda_built();

/// "cuda: built for 80-real 86-real 89-real 90" or "cuda: not built (this dllm runs on the CPU only)".
std::string cuda_build_line();

/// The --version text: version_line(), the CPU line for the path `run` picks without --isa
/// (describe_default_isa: $DLLM_CPU_ISA when set, else the best), and cuda_build_line(); each ends in
/// a newline.
std::string version_text();

}  // namespace dllm::cli
