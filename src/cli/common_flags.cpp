// See common_flags.h.
#include "cli/common_flags.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "base/isa.h"
#include "cli/util.h"

namespace dllm::cli {

namespace {

// v is a whole number in [min, max] (decimal digits only, the whole string).
bool whole_in(const std::string& v, int64_t min, int64_t max) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && p == v.data() + v.size() && x >= min && x <= max;
}

// v is written as a whole number ("-"? digits), whatever its size.
bool looks_whole(const std::string& v) {
  const size_t start = !v.empty() && v[0] == '-' ? 1 : 0;
  return v.size() > start && v.find_first_not_of("0123456789", start) == std::string::npos;
}

}  // namespace

CLI::Validator whole_number(int64_t min) {
  return CLI::Validator(
      [min](std::string& v) -> std::string {
        if (whole_in(v, min, std::numeric_limits<int64_t>::max())) return "";
        // A whole number beyond what int64 holds: say the range rather than "a whole number". One that
        // int64 holds but below min (0 for >= 1) gets the rule alone: its upper end says nothing there.
        const bool fits =
            whole_in(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
        if (looks_whole(v) && v[0] != '-' && !fits) {
          return "must be a whole number from " + std::to_string(min) + " to " +
                 std::to_string(std::numeric_limits<int64_t>::max()) + ", got '" + v + "'";
        }
        return "must be a whole number >= " + std::to_string(min) + ", got '" + v + "'";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator whole_number_u64() {
  const std::string max = std::to_string(std::numeric_limits<uint64_t>::max());
  return CLI::Validator(
      [max](std::string& v) -> std::string {
        uint64_t x = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec == std::errc() && p == v.data() + v.size()) return "";
        return "must be a whole number from 0 to " + max + " (2^64 - 1), got '" + v + "'";
      },
      "INT in [0, " + max + "]");
}

CLI::Validator real_number(double min, double max, bool min_exclusive) {
  auto show = [](double d) {
    if (d == std::numeric_limits<double>::infinity()) return std::string("inf");
    std::string s = std::to_string(d);
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
    return s;
  };
  const std::string range = (min_exclusive ? "(" : "[") + show(min) + ", " + show(max) +
                            (max == std::numeric_limits<double>::infinity() ? ")" : "]");
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        const bool parsed = !v.empty() && end == v.c_str() + v.size() && std::isfinite(x);
        if (!parsed || x < min || (min_exclusive && x == min) || x > max) {
          return "must be a number in " + range + ", got '" + v + "'";
        }
        return "";
      },
      "NUMBER in " + range);
}

CLI::Validator positive_float() {
  char range[96];
  std::snprintf(range, sizeof range, "[%.3g, %.3g]", static_cast<double>(std::numeric_limits<float>::min()),
                static_cast<double>(std::numeric_limits<float>::max()));
  const std::string r = range;
  return CLI::Validator(
      [r](std::string& v) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        const bool parsed = !v.empty() && end == v.c_str() + v.size() && std::isfinite(x);
        if (!parsed || !(x >= std::numeric_limits<float>::min()) || x > std::numeric_limits<float>::max())
          return "must be a number in " + r + " (a positive float), got '" + v + "'";
        return "";
      },
      "NUMBER in " + r);
}

void add_model_flags(CLI::App& sub, ModelFlags& f) {
  sub.add_option("-m,--model", f.model,
                 "GGUF file, or Hugging Face repo org/repo[:QUANT] (downloaded to the HF cache)");
  sub.add_flag("--offline", f.offline, "Use the local Hugging Face cache only (also HF_HUB_OFFLINE=1)");
}

int max_threads() {
  return 4 * logical_cpus();
}

int resolve_threads(int threads, std::string* warning) {
  if (threads > 0) return threads;
  const char* env = std::getenv("OMP_NUM_THREADS");
  // main.cpp renames a value libgomp would reject before libgomp starts: it is still the user's.
  if (env == nullptr) env = std::getenv("DLLM_IGNORED_OMP_NUM_THREADS");
  if (env == nullptr || *env == '\0') return 0;
  std::string first(env);
  first = first.substr(0, first.find(','));
  while (!first.empty() && first.back() == ' ') first.pop_back();
  while (!first.empty() && first.front() == ' ') first.erase(0, 1);
  if (whole_in(first, 1, max_threads())) return std::stoi(first);
  // Out of the OpenMP runtime's sight too: GCC's libgomp ignores a bad value, LLVM's libomp (clang
  // builds) warns and then aborts on an assertion at its first parallel region.
  unsetenv("OMP_NUM_THREADS");
  if (warning) {
    *warning = std::string("OMP_NUM_THREADS=") + env + " is not a thread count from 1 to " +
               std::to_string(max_threads()) + ": ignored, using one thread per physical core";
  }
  return 0;
}

std::string threads_warning(int threads, bool from_env) {
  const int cpus = logical_cpus();
  if (threads <= cpus) return "";
  const std::string source =
      from_env ? "OMP_NUM_THREADS=" + std::to_string(threads) : "--threads " + std::to_string(threads);
  return source + " is more than the " + std::to_string(cpus) +
         " logical CPUs this process may use: threads will take turns on the cores, which is slower "
         "(leave --threads out for one per physical core)";
}

void add_compute_flags(CLI::App& sub, ComputeFlags& f) {
  const int cap = max_threads();
  const std::string cpus = std::to_string(logical_cpus());
  sub.add_option("-t,--threads", f.threads,
                 "CPU threads (0: $OMP_NUM_THREADS when set, else one per physical core; at most 4 x the " +
                     cpus +
                     " logical CPUs). OpenMP workers sleep when idle (OMP_WAIT_POLICY=passive) unless "
                     "OMP_WAIT_POLICY or GOMP_SPINCOUNT is set")
      ->check(CLI::Validator(
          [cap, cpus](std::string& v) -> std::string {
            if (!whole_in(v, 0, cap)) {
              return "must be a whole number from 0 (one per physical core) to " + std::to_string(cap) +
                     " (4 x the " + cpus + " logical CPUs), got '" + v + "'";
            }
            return "";
          },
          "INT in [0, " + std::to_string(cap) + "]"))
      ->default_val(0);
  sub.add_option(
         "--isa", f.isa,
         "CPU kernel path: scalar, avx2, avxvnni, avx512vnni, amx (avx512vnni with the Q4_K and Q5_K "
         "GEMMs on Intel AMX tiles). Default (or auto): $DLLM_CPU_ISA when set, else the best this CPU "
         "runs, amx first")
      ->check(CLI::IsMember({"auto", "scalar", "ref", "avx2", "avxvnni", "avx512vnni", "avx512", "amx"}));
  sub.add_option("--device", f.device,
                 "Where the model runs: cpu, gpu, or auto (a usable NVIDIA GPU, else the CPU; the CPU when "
                 "--isa or DLLM_CPU_ISA picks a CPU kernel path)")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}))
      ->capture_default_str();
  sub.add_option("--gpu-gemm", f.gpu_gemm, "GPU matrix path: int8 (tensor cores) or cublas (f16 reference)")
      ->check(CLI::IsMember({"int8", "cublas"}))
      ->capture_default_str();
}

std::string resolve_device(const ComputeFlags& f) {
  if (f.device != "auto") return f.device;
  const bool cpu_path_chosen = (!f.isa.empty() && f.isa != "auto") || !isa_from_env().empty();
  return cpu_path_chosen ? "cpu" : "auto";
}

bool offline_requested(const ModelFlags& f) {
  if (f.offline) return true;
  const char* env = std::getenv("HF_HUB_OFFLINE");
  return env && *env && std::string(env) != "0";
}

}  // namespace dllm::cli
