// make_synthetic_gguf: writes a full-size LLaDA-8B, Dream-7B, LLaDA-MoE-7B-A1B, RND1 (30B-A3B) or
// LLaDA2.0-mini (16B-A1B) shaped Q4_K_M GGUF with random weights (for benchmarks and load tests; see
// synthetic_gguf.h).
//   make_synthetic_gguf --arch llada|dream|llada-moe|rnd1|llada2|bailingmoe2 --out PATH [--seed N]
//                       [--layers N] [--tiny] [--dry-run]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "gguf/ggml_types.h"
#include "synthetic_gguf.h"

namespace {

const char* kUsage =
    "usage: make_synthetic_gguf --arch llada|dream|llada-moe|rnd1|llada2|bailingmoe2|diffusion-gemma\n"
    "                           --out PATH [--seed N] [--layers N] [--tiny] [--dry-run]\n"
    "  --arch     llada (LLaDA-8B shape), dream (Dream-7B), llada-moe (LLaDA-MoE-7B-A1B), rnd1\n"
    "             (RND1-Base-0910, 30B-A3B), llada2 (LLaDA2.0-mini, 16B-A1B), or bailingmoe2 (the same\n"
    "             tensors as llada2, byte for byte with the same seed, labelled for llama.cpp's\n"
    "             autoregressive bailingmoe2 path), or diffusion-gemma (DiffusionGemma 26B-A4B, llama.cpp\n"
    "             PR #24423's layout; with --layers N < 30 the last layer is a global one)\n"
    "  --out      output GGUF path (replaced)\n"
    "  --seed     random seed (default 1); the same seed gives the same file\n"
    "  --layers   number of layers (default: the real model's, 32 / 28 / 16 / 48 / 20 / 30); fewer gives a\n"
    "             smaller file\n"
    "  --tiny     llada2 / bailingmoe2 only: the shape of ../shared/reference/tiny-llada2-q4km.gguf\n"
    "             (4 layers, hidden 256, 16 experts), with the full size's tokenizer (about 66 MB)\n"
    "  --dry-run  print the tensor plan (name type ne0,ne1) instead of writing\n";

uint64_t parse_number(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || v[0] == '-')
    throw dllm::UsageError("invalid value for " + flag + ": '" + v + "' (expected a non-negative integer)");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string arch, out;
    uint64_t seed = 1, layers = 0;
    bool dry_run = false, tiny = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw dllm::UsageError(a + " needs a value");
        return argv[++i];
      };
      if (a == "--arch") {
        arch = value();
      } else if (a == "--out") {
        out = value();
      } else if (a == "--seed") {
        seed = parse_number(a, value());
      } else if (a == "--layers") {
        layers = parse_number(a, value());
        if (layers == 0 || layers > 1000) throw dllm::UsageError("--layers must be in 1..1000");
      } else if (a == "--tiny") {
        tiny = true;
      } else if (a == "--dry-run") {
        dry_run = true;
      } else if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else {
        throw dllm::UsageError("unknown flag '" + a + "'\n" + kUsage);
      }
    }
    if (arch.empty())
      throw dllm::UsageError("--arch is required (llada, dream, llada-moe, rnd1, llada2 or bailingmoe2)");
    const dllm::synth::Spec spec = dllm::synth::spec_for(arch, static_cast<uint32_t>(layers), tiny);
    if (dry_run) {
      for (const auto& t : dllm::synth::tensor_plan(spec)) {
        std::printf("%s %s", t.name.c_str(), dllm::gguf::type_name(t.type).c_str());
        for (size_t d = 0; d < t.ne.size(); ++d)
          std::printf("%c%lld", d ? ',' : ' ', static_cast<long long>(t.ne[d]));
        std::printf("\n");
      }
      return 0;
    }
    if (out.empty()) throw dllm::UsageError("--out is required");
    const auto t0 = std::chrono::steady_clock::now();
    dllm::synth::write_synthetic_gguf(spec, out, seed);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "wrote %s (%s, %u layers) in %.1f s\n", out.c_str(), spec.arch.c_str(), spec.n_layer,
                 s);
    return 0;
  } catch (const dllm::Error& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return 1;
  }
}
