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
  int threads = 0;                ///< --threads/-t: 0 = $OMP_NUM_THREADS, else physical cores
  std::string isa;                ///< --isa: "" = $DLLM_CPU_ISA if set, else the best for this CPU
  std::string device = "auto";    ///< --device: cpu | gpu | auto (see resolve_device)
  std::string gpu_gemm = "int8";  ///< --gpu-gemm: int8 | cublas
};

void add_model_flags(CLI::App& sub, ModelFlags& f);

/// Validators with messages that name the rule, e.g. "must be a whole number >= 1, got 'abc'"
/// (CLI11 prefixes the flag name). `min_exclusive` makes the lower bound strict: (min, max].
CLI::Validator whole_number(int64_t min);
/// A whole number in [0, 2^64 - 1] (a uint64 such as --seed), the range named in the message.
CLI::Validator whole_number_u64();
CLI::Validator real_number(double min, double max, bool min_exclusive = false);
/// A positive number that stays a positive, finite normal float (a value the sampler holds as float:
/// 1e39 would become inf, 1e-50 zero), the range named in the message.
CLI::Validator positive_float();
void add_compute_flags(CLI::App& sub, ComputeFlags& f);

/// The largest --threads accepted: 4 x logical_cpus(). More threads than that cannot help (each one
/// gets at most a quarter of a core and every parallel region waits for the slowest), so a bigger
/// number is a typo; a fixed cap such as 1024 would still let "--threads 1000" through on a 2-CPU machine.
int max_threads();

/// The thread count to ask the backend for: `threads` (--threads) when > 0; for 0, the first entry of
/// $OMP_NUM_THREADS ("4" of "4,2", OpenMP's list for nested levels) when it is a whole number in
/// [1, max_threads()]; else 0 (one per physical core). A set but unusable OMP_NUM_THREADS gives 0 and a
/// warning in *warning naming it, and is removed from the environment (before any OpenMP region) so
/// that no OpenMP runtime reads it: LLVM's libomp aborts on one.
int resolve_threads(int threads, std::string* warning);

/// The warning for a thread count above the logical CPU count (within max_threads()): one line naming
/// where the count came from (--threads N, or OMP_NUM_THREADS=N when `from_env`), the value and the
/// CPU count; empty when `threads` <= logical_cpus() (0 = automatic).
std::string threads_warning(int threads, bool from_env = false);

/// The device to build: --device as given, except that `auto` (the default) means the CPU when the
/// user picked a CPU kernel path (--isa, or $DLLM_CPU_ISA, other than auto): that choice has no
/// meaning on the GPU. Otherwise `auto` is the GPU when one is usable (src/engine/backend.h), else the CPU.
std::string resolve_device(const ComputeFlags& f);

/// True when --offline was given or HF_HUB_OFFLINE is set to something other than "" / "0".
bool offline_requested(const ModelFlags& f);

}  // namespace dllm::cli
