// Helpers the benchmark programs share for their results files (bench/results/*.json).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "build_info.h"  // generated at build time (cmake/build_info.cmake)

namespace dllm::bench {

/// The commit this binary was built from, as `dllm --version` names it (12 hex digits, "-dirty" when
/// tracked files differed from it at build time, "unknown" outside a git checkout). Not the checkout's
/// HEAD at run time: a results file must name the code that produced it.
inline std::string build_commit() {
  return DLLM_GIT_COMMIT;
}

/// stdout of a shell command with trailing newlines and spaces removed; "" when it cannot run.
/// Used for provenance only (git commit, CPU model), never for a figure.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

/// The CPU for a results file: vendor, model name (lscpu) and the ISA flags our kernel paths use, as
/// /proc/cpuinfo lists them.
inline std::string cpu_vendor() {
  return run_command("lscpu | sed -n 's/^Vendor ID: *//p'");
}
inline std::string cpu_model() {
  return run_command("lscpu | sed -n 's/^Model name: *//p'");
}
inline std::string cpu_isa_flags() {
  return run_command(
      "grep -m1 -o -w -E 'avx2|avx_vnni|avx512f|avx512_vnni|amx_tile|amx_int8|amx_bf16' /proc/cpuinfo | "
      "tr '\\n' ' '");
}

/// The repository root: two levels above the running binary (build-*/bin/<bench>) when that folder has
/// bench/CMakeLists.txt, else the working directory.
inline std::filesystem::path repo_root() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto root = exe.parent_path().parent_path().parent_path();
    if (std::filesystem::exists(root / "bench" / "CMakeLists.txt")) return root;
  }
  return std::filesystem::current_path();
}

}  // namespace dllm::bench
