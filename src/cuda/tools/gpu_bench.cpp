// dllm_gpu_bench: times the GPU forward pass (one denoising step's work) on a GGUF file, for
// scripts/gpu-check.sh. Measurement only: correctness is tests/cuda's job.
//
//   dllm_gpu_bench MODEL.gguf [--canvas N] [--rows R] [--gemm int8|cublas] [--steps S] [--warmup W]
//
// A step = GpuForward::forward over N tokens (random ids) with logits for R rows (the last R
// positions: one block of the canvas, as a block-wise sampler asks), including the copy of the
// logits to the host; then the same steps through forward_stats (statistics per row instead of
// logits). Prints one JSON object on stdout: model, gpu, gemm, canvas, rows, steps, ms per step
// (median, min, mean; median with forward_stats), load seconds, device bytes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "cuda/device.h"
#include "gguf/gguf.h"
#include "model/model.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: dllm_gpu_bench MODEL.gguf [--canvas N] [--rows R] [--gemm int8|cublas] [--steps S] "
               "[--warmup W]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace dllm;
  if (argc < 2) return usage();
  std::string path = argv[1];
  int64_t canvas = 141, rows_n = 32;
  int steps = 10, warmup = 2;
  cuda::GpuGemm gemm = cuda::GpuGemm::kInt8;
  try {
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (i + 1 >= argc) return usage();
      const std::string v = argv[++i];
      if (a == "--canvas")
        canvas = std::stoll(v);
      else if (a == "--rows")
        rows_n = std::stoll(v);
      else if (a == "--steps")
        steps = std::stoi(v);
      else if (a == "--warmup")
        warmup = std::stoi(v);
      else if (a == "--gemm")
        gemm = cuda::parse_gpu_gemm(v);
      else
        return usage();
    }
    rows_n = std::min(rows_n, canvas);
    const auto t_load0 = std::chrono::steady_clock::now();
    const auto file = gguf::GgufFile::open(path);
    const auto model = model::Model::load(file);
    cuda::GpuForwardOptions opt;
    opt.max_tokens = canvas;
    opt.gemm = gemm;
    cuda::GpuForward fwd(model, opt);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load0).count();
    std::fprintf(stderr, "%s\n", cuda::describe(fwd.gpu()).c_str());

    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(model.n_vocab_embd() - 1));
    std::vector<int32_t> tokens(canvas);
    for (auto& t : tokens) t = tok(rng);
    std::vector<int32_t> rows(rows_n);
    for (int64_t j = 0; j < rows_n; ++j) rows[j] = static_cast<int32_t>(canvas - rows_n + j);
    std::vector<float> logits(rows_n * fwd.n_vocab());
    forward::Segment seg;  // the whole canvas, the last rows_n rows' logits
    seg.tokens = tokens;
    seg.logit_rows = rows;
    seg.logits = logits.data();
    for (int i = 0; i < warmup; ++i) fwd.forward({&seg, 1});
    std::vector<double> ms;
    for (int i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fwd.forward({&seg, 1});
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    // The same steps through forward_stats: per-row statistics on the device, 32 bytes per row back
    // instead of the logits rows (what a temperature-0 sampler needs).
    std::vector<cuda::RowStats> stats(rows_n);
    std::vector<double> ms_stats;
    for (int i = 0; i < steps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fwd.forward_stats(tokens, rows, stats.data());
      ms_stats.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    };
    double mean = 0;
    for (double m : ms) mean += m / ms.size();
    const double min_ms = *std::min_element(ms.begin(), ms.end());
    bool finite = true;
    for (float x : logits) finite = finite && std::isfinite(x);
    std::printf(
        "{\"model\": \"%s\", \"arch\": \"%s\", \"gpu\": \"%s\", \"gemm\": \"%s\", \"canvas\": %lld, "
        "\"rows\": %lld, \"steps\": %d, \"ms_per_step_median\": %.3f, \"ms_per_step_min\": %.3f, "
        "\"ms_per_step_mean\": %.3f, \"ms_per_step_stats_median\": %.3f, \"load_s\": %.2f, "
        "\"weight_bytes\": %zu, \"buffer_bytes\": %zu, \"logits_finite\": %s}\n",
        path.c_str(), model.config().arch_name.c_str(), fwd.gpu().name.c_str(), cuda::gpu_gemm_name(gemm),
        (long long)canvas, (long long)rows_n, steps, median_of(ms), min_ms, mean, median_of(ms_stats), load_s,
        fwd.weight_bytes(), fwd.buffer_bytes(), finite ? "true" : "false");
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return 1;
  }
}
