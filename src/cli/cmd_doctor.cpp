// `dllm doctor [--model SPEC]`: what this machine and this build can run, changing nothing and using
// no network: the build, the CPU's kernel paths, free memory against the model, the GPU `--device
// auto` would pick (or why none), the GGUF files in the Hugging Face cache, the model `run` picks
// without --model, and a command to try. One line per check on stdout; a line that is not ok says
// how to fix it. The ./dllm launcher prints its build checks (packages, the binary's age) before these.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "base/isa.h"
#include "cli/commands.h"
#include "cli/common_flags.h"
#include "cli/default_model.h"
#include "cli/model_source.h"
#include "cli/util.h"
#include "cli/version.h"
#include "cuda/device.h"
#include "gguf/gguf.h"
#include "hub/hub.h"
#include "hub/model_ref.h"

namespace dllm::cli {

namespace {

namespace fs = std::filesystem;

/// "12.3 GB", "3.6 MB" (decimal, as the hub quotes model sizes).
std::string gb(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b >= 1e8) {
    std::snprintf(buf, sizeof buf, "%.1f GB", b / 1e9);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  }
  return buf;
}

/// The first "key : value" line of a /proc file whose key is `key`; "" when absent.
std::string proc_value(const char* file, const std::string& key) {
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k != key) continue;
    std::string v = line.substr(colon + 1);
    const size_t start = v.find_first_not_of(" \t");
    return start == std::string::npos ? "" : v.substr(start);
  }
  return "";
}

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

std::string cpu_line() {
  const CpuFeatures& f = cpu_features();
  std::string name = proc_value("/proc/cpuinfo", "model name");
  std::string s = "cpu: " + (name.empty() ? std::string("x86-64") : name) + " (" +
                  std::to_string(logical_cpus()) + " logical CPUs): AVX2 " + yes_no(f.avx2 && f.fma) +
                  ", AVX-VNNI " + yes_no(f.avx_vnni) + ", AVX-512 VNNI " + yes_no(f.avx512vnni) + "; ";
  if (best_isa() == Isa::kScalar) {
    return s + "only the scalar kernels run here, which is slow (dllm's fast paths need AVX2 and FMA)";
  }
  try {
    return s + "run uses the " + isa_name(choose_isa()) + " kernels" +
           (isa_from_env().empty() ? "" : " ($DLLM_CPU_ISA)");
  } catch (const UsageError& e) {
    return s + "run refuses " + e.what();
  }
}

/// A model as doctor reports it: what to call it, where it is (when local), its size (0: unknown).
struct ModelAtHand {
  std::string label;
  std::string path;
  uint64_t bytes = 0;
};

/// `spec` located without network: a file on disk, or a repo spec already in the cache.
ModelAtHand locate(const std::string& spec, const hub::HubOptions& opts) {
  ModelAtHand m{spec, "", 0};
  std::error_code ec;
  if (fs::is_regular_file(spec, ec)) {
    m.path = spec;
    m.bytes = fs::file_size(spec, ec);
  } else if (const auto cached = hub::find_cached(spec, opts)) {
    m.path = cached->path;
    m.bytes = cached->file.size_bytes;
  }
  return m;
}

/// What doctor reads of a model's shape for its memory estimates.
struct ModelShape {
  int64_t embd = 0, n_ctx = 0, n_vocab = 0;
};

// What a process holds once a model is loaded, measured (VmRSS from /proc/PID/status of an idle
// `dllm serve`; docs/serving.md "Memory at the defaults"), less the binary's own VmRSS before any model
// (about 0.17 GB here: code and libraries, the CUDA build maps cuBLAS), against the file's size and
// its vocabulary: synthetic LLaDA-8B Q4_K_M (4,922,993,216 bytes, 126,464 tokens) 5,502 MB; tiny
// Dream (61.7 MB, 152,064) 152 MB; tiny LLaDA, LLaDA-MoE, RND1 (21.6, 24.3, 16.8 MB, 50,262) 56, 60,
// 52 MB. A least-squares fit: 1.103 bytes per file byte (the matrices repacked for the int8 kernels,
// the embedding read from the file) and 574 bytes per vocabulary entry (the tokenizer's tables), every
// model within 5 MB. The process part is this binary's own VmRSS, read at run time, because it varies
// with the build and the machine's loader. An estimate for other shapes, not a promise.
constexpr double kLoadedPerFileByte = 1.103;
constexpr double kLoadedPerVocabEntry = 574.0;
// While canvases run, `serve`'s activation buffers grow with the largest step up to max(2, --parallel)
// x context rows: about 61 bytes per row per unit of the embedding width (LLaDA-8B at 16384, 8192,
// 4096, 1024 rows: 254,464 bytes a row).
constexpr double kRowBytesPerEmbd = 61.0;

/// This process's resident bytes now (VmRSS): the binary and its libraries before a model is loaded.
uint64_t process_bytes() {
  const std::string kb = proc_value("/proc/self/status", "VmRSS");
  return kb.empty() ? static_cast<uint64_t>(0.2e9) : std::stoull(kb) * 1024;
}

/// Bytes a process holds once the model is loaded (the process and the weights as the kernels read
/// them); `n_vocab` 0 when unknown (then LLaDA-8B's 126,464).
uint64_t loaded_bytes(uint64_t file_bytes, int64_t n_vocab) {
  const auto vocab = static_cast<double>(n_vocab > 0 ? n_vocab : 126464);
  return process_bytes() + static_cast<uint64_t>(static_cast<double>(file_bytes) * kLoadedPerFileByte +
                                                 vocab * kLoadedPerVocabEntry);
}

std::string memory_line(const ModelAtHand& m, int64_t n_vocab) {
  const std::string avail_kb = proc_value("/proc/meminfo", "MemAvailable");
  if (avail_kb.empty()) return "memory: unknown (no MemAvailable in /proc/meminfo)";
  const uint64_t avail = std::stoull(avail_kb) * 1024;
  if (m.bytes == 0) {
    return "memory: " + gb(avail) + " available (the size of " + m.label + " is known once it is downloaded)";
  }
  const uint64_t need = loaded_bytes(m.bytes, n_vocab);
  if (avail < need) {
    return "memory: " + gb(avail) + " available, " + m.label + " needs about " + gb(need) +
           " loaded (its file is " + gb(m.bytes) +
           "): TOO LITTLE (close other programs or use a smaller model)";
  }
  return "memory: " + gb(avail) + " available (enough for run on " + m.label + ", about " + gb(need) +
         " loaded; its file is " + gb(m.bytes) + ")";
}

/// What `dllm serve` holds at its defaults (--parallel 4, -c 4096, clamped to the model's context):
/// idle, the process and the weights as loaded; while canvases run, up to max(2, parallel) x context
/// rows of activation buffers more. The shape is the model's (0: unknown, then LLaDA-8B's).
std::string serve_memory_line(const ModelAtHand& m, const ModelShape& shape) {
  if (m.bytes == 0) return "";
  constexpr int64_t kParallel = 4, kCtx = 4096;  // cmd_serve.cpp's defaults
  const int64_t embd = shape.embd > 0 ? shape.embd : 4096;
  const int64_t ctx = shape.n_ctx > 0 ? std::min(shape.n_ctx, kCtx) : kCtx;
  const auto rows = static_cast<double>(std::max<int64_t>(2, kParallel) * ctx);
  const auto buffers = static_cast<uint64_t>(rows * kRowBytesPerEmbd * static_cast<double>(embd));
  const uint64_t idle = loaded_bytes(m.bytes, shape.n_vocab);
  std::string s = "serve: at its defaults (--parallel 4, -c " + std::to_string(ctx) + ") " + m.label +
                  " needs about " + gb(idle) + " idle (the process and its weights) and up to " +
                  gb(buffers) + " more while 4 canvases of " + std::to_string(ctx) +
                  " positions run (activation buffers, grown by the largest step; they scale with "
                  "--parallel x -c)";
  const std::string avail_kb = proc_value("/proc/meminfo", "MemAvailable");
  if (!avail_kb.empty() && std::stoull(avail_kb) * 1024 < idle + buffers)
    s += ": TOO LITTLE here for both (try serve -c 1024 or --parallel 1)";
  return s;
}

/// The embedding width, context and vocabulary size of the GGUF at `path` (zeros when it cannot be
/// read).
ModelShape model_shape(const std::string& path) {
  if (path.empty()) return {};
  try {
    const gguf::GgufFile f = gguf::GgufFile::open(path);
    const std::string arch = f.get_string("general.architecture");
    const auto embd = f.find_u64(arch + ".embedding_length");
    const auto ctx = f.find_u64(arch + ".context_length");
    const gguf::Value* tokens = f.find("tokenizer.ggml.tokens");
    return {embd ? static_cast<int64_t>(*embd) : 0, ctx ? static_cast<int64_t>(*ctx) : 0,
            tokens ? static_cast<int64_t>(tokens->items.size()) : 0};
  } catch (const std::exception&) {
    return {};
  }
}

/// The NVIDIA GPU the kernel driver lists (/proc/driver/nvidia/gpus/*/information "Model:"), for a
/// build that cannot ask CUDA; "" when there is none.
std::string driver_gpu_name() {
  std::error_code ec;
  for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = proc_value((it->path() / "information").c_str(), "Model");
    return name.empty() ? "an NVIDIA GPU" : name;
  }
  return "";
}

std::string gpu_line(bool cuda_built) {
  const cuda::GpuProbe probe = cuda::probe_gpu();
  if (probe.gpu) {
    return "gpu: " + cuda::describe(*probe.gpu) +
           ": usable (run and logits use it; --device cpu to opt out; the GPU backend is still experimental, "
           "docs/gpu.md)";
  }
  const std::string present = driver_gpu_name();
  if (!cuda_built && !present.empty()) {
    return "gpu: " + present +
           " is present, but this dllm was built without the CUDA backend, so it runs on the CPU (fix: "
           "install the CUDA toolkit so nvcc is on PATH, then rm -rf build && ./dllm setup)";
  }
  return "gpu: none usable (" + probe.reason + "); dllm runs on the CPU";
}

std::string shell_word(const std::string& word) {
  return word.find_first_of(" \t'\"$") == std::string::npos ? word : "'" + word + "'";
}

}  // namespace

int print_doctor_report(const std::string& model) {
  const hub::HubOptions opts = hub_options(true);  // doctor never downloads
  std::cout << "build: " << version_line() << "; " << cuda_build_line() << "\n";
  std::cout << cpu_line() << "\n";

  // The model the report is about: --model, else $DLLM_MODEL, else the default LLaDA-8B (also while
  // run falls back to the demo model: it is the one to get, and the one memory must fit).
  using Source = DefaultChoice::Source;
  const DefaultChoice choice = choose_default_model(opts);
  const bool explicit_model = !model.empty() || choice.source == Source::kEnv;
  ModelAtHand target = locate(!model.empty()   ? model
                              : explicit_model ? choice.spec
                                               : kDefaultModelSpec,
                              opts);
  if (!explicit_model) {
    target.label = kDefaultModelName;
    if (target.bytes == 0) target.bytes = kDefaultModelBytes;
  }
  const ModelShape shape = model_shape(target.path);
  std::cout << memory_line(target, shape.n_vocab) << "\n";
  if (const std::string line = serve_memory_line(target, shape); !line.empty()) std::cout << line << "\n";
  std::cout << gpu_line(cuda_built()) << "\n";

  const std::vector<hub::ResolvedModel> cached = hub::list_cache(opts);
  if (cached.empty()) {
    std::cout << "models: none in the Hugging Face cache (" << opts.cache_dir.string()
              << ") (fix: ./dllm pull, or ./dllm run --model PATH.gguf)\n";
  }
  for (const auto& m : cached)
    std::cout << "model: " << m.path << " (" << format_bytes(m.file.size_bytes) << ")\n";

  // Which model run uses, and a prompt that suits it.
  std::string try_flags, try_path;
  if (!model.empty()) {
    try_flags = "--model " + shell_word(model) + " ";
    try_path = target.path;
    if (try_path.empty()) {
      std::cout << "model: " << model << " is not on this machine (fix: ./dllm pull " << model
                << ", or give an existing .gguf path)\n";
    }
  } else {
    const std::string spec = choice.spec;
    switch (choice.source) {
      case Source::kEnv:
        std::cout << "default model: " << spec << " ($DLLM_MODEL)"
                  << (target.path.empty()
                          ? ": not on this machine yet (run downloads it; ./dllm pull does it now)"
                          : "")
                  << "\n";
        try_path = target.path;
        break;
      case Source::kCached:
        std::cout << "default model: " << spec << ", in the cache\n";
        try_path = target.path;
        break;
      case Source::kDemo:
        std::cout << "default model: " << kDefaultModelSpec
                  << " is not in the cache, so run uses the demo model " << kDemoModelFile
                  << " (fix: ./dllm pull, about " << gb(kDefaultModelBytes) << ")\n";
        try_path = spec;
        break;
      case Source::kDownload:
        std::cout << "default model: " << spec << " is not in the cache: run downloads it first (about "
                  << gb(kDefaultModelBytes) << "; ./dllm pull does it now)\n";
        break;
    }
  }
  std::cout << "try: ./dllm run " << try_flags << "\"" << suggested_prompt(try_path) << "\"\n";
  return 0;
}

Command add_doctor_command(CLI::App& root) {
  auto o = std::make_shared<ModelFlags>();
  CLI::App* sub = root.add_subcommand(
      "doctor", "Check this machine and build (CPU kernels, memory, GPU, cached models), changing nothing");
  sub->add_option("-m,--model", o->model,
                  "Check against this model (GGUF path or org/repo[:QUANT]) instead of the default");
  return {sub, [o]() { return print_doctor_report(o->model); }};
}

}  // namespace dllm::cli
