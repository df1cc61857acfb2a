// Microbenchmark of cpu/panel_gemm.h on DiffusionGemma 26B-A4B's self-conditioning shape (256 canvas
// rows x hidden 2816, 2048 of the 262144 ids per run: 8 panels; a step with every id used is 128 times
// this), with the core's f32 FMA peak measured in the same run. Performance only: correctness is
// tests/cpu/panel_gemm_test.
//
// 1. Peak: a loop of independent vfmadd231ps (zmm, or ymm without AVX-512; inline asm, 12 accumulators)
//    on the calling thread, median of 7, in multiply-adds per second of thread CPU time.
// 2. BM_panel_gemm/<path>/<threads>/<decode>: path 4 is amx (AMX-BF16 tiles, run where
//    amx_bf16_supported()), 3 avx512vnni, 1 avx2, 0 scalar; decode 0 copies B's rows from an f32 table (the
//    GEMM alone), decode 1 dequantizes them from Q6_K (token_embd's type in the Q4_K_M files, through
//    quant::dequantize_row as the forward pass does). BM_dequant_q6k: the dequantization alone, one
//    thread. Counters: GFMA = m n k / wall time / 1e9; GFMA_cpu per CPU second summed over the threads;
//    peak_frac_cpu = GFMA_cpu / peak (GFMA_cpu is already a per-thread rate).
//
// Usage: panel_gemm_bench [google-benchmark flags]. Without --benchmark_out it writes
// bench/results/panel-gemm-<utc time>.json (machine, commit, command and the peak in "context").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "base/isa.h"
#include "bench_util.h"
#include "cpu/panel_gemm.h"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace {

using dllm::Isa;

constexpr int64_t kM = 256, kN = 2816, kK = 2048;
double g_peak = 0;  // f32 multiply-adds per CPU second, one thread

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

#define DLLM_FMA_Z(i) "vfmadd231ps %%zmm1, %%zmm0, %%zmm" #i "\n\t"
#define DLLM_FMA_Y(i) "vfmadd231ps %%ymm1, %%ymm0, %%ymm" #i "\n\t"
#define DLLM_FMA12(X) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)

/// Multiply-adds per CPU second of 12 independent FMA chains on one thread (median of 7 runs).
double measure_peak(bool zmm) {
  const int64_t iters = 20'000'000;
  std::vector<double> runs;
  for (int r = 0; r < 7; ++r) {
    const double t0 = cpu_seconds();
    for (int64_t i = iters; i > 0; --i) {
      if (zmm)
        asm volatile(DLLM_FMA12(DLLM_FMA_Z)::
                         : "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                           "xmm12", "xmm13");
      else
        asm volatile(DLLM_FMA12(DLLM_FMA_Y)::
                         : "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
                           "xmm12", "xmm13");
    }
    runs.push_back(static_cast<double>(iters) * 12 * (zmm ? 16 : 8) / (cpu_seconds() - t0));
  }
  std::sort(runs.begin(), runs.end());
  return runs[3];
}

struct Operands {
  std::vector<float> a, b, c;
  std::vector<dllm::quant::block_q6_K> q6;
  std::vector<int32_t> ids;
  Operands() {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    a.resize(kM * kK);
    for (float& x : a) x = dllm::quant::fp16_to_fp32(dllm::quant::fp32_to_fp16(u(rng) * 1e-3f));
    b.resize(kK * kN);
    for (float& x : b) x = u(rng) - 0.5f;
    c.assign(kM * kN, 0.0f);
    q6.resize(kK * (kN / 256));
    for (auto& blk : q6) {
      for (auto& x : blk.ql) x = static_cast<uint8_t>(rng());
      for (auto& x : blk.qh) x = static_cast<uint8_t>(rng());
      for (auto& x : blk.scales) x = static_cast<int8_t>(rng() % 64);
      blk.d = dllm::quant::fp32_to_fp16(1e-3f);
    }
    for (int32_t i = 0; i < kK; ++i) ids.push_back(i);
  }
};

const Operands& operands() {
  static const Operands o;
  return o;
}

void BM_panel_gemm(benchmark::State& st) {
  const auto isa = static_cast<Isa>(st.range(0));
  const int threads = static_cast<int>(st.range(1));
  const bool q6 = st.range(2) != 0;
  if (!dllm::isa_supported(isa) || (isa == Isa::kAmx && !dllm::amx_bf16_supported())) {
    st.SkipWithError("path not supported here");
    return;
  }
  const Operands& o = operands();
  std::vector<float> c = o.c;
  dllm::cpu::PanelGemm g{
      .a = o.a.data(), .lda = kK, .m = kM, .ids = o.ids.data(), .k = kK, .n = kN, .b_row = {}};
  if (q6)
    g.b_row = [&](int64_t id, int64_t j0, int64_t j1, float* dst) {
      // The super-blocks over [j0, j1), as the forward pass decodes a GGUF Q6_K row's columns.
      thread_local std::vector<float> blocks;
      const int64_t sb0 = j0 / 256, sb1 = (j1 + 255) / 256;
      blocks.resize(static_cast<size_t>((sb1 - sb0) * 256));
      dllm::quant::dequantize_row(dllm::gguf::GgmlType::Q6_K, &o.q6[id * (kN / 256) + sb0], blocks.data(),
                                  (sb1 - sb0) * 256);
      std::copy_n(blocks.begin() + (j0 - sb0 * 256), j1 - j0, dst);
    };
  else
    g.b_row = [&](int64_t id, int64_t j0, int64_t j1, float* dst) {
      std::memcpy(dst, &o.b[id * kN + j0], (j1 - j0) * sizeof(float));
    };
  g.c = c.data();
  g.ldc = kN;
  timespec p0{}, p1{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p0);
  for (auto _ : st) dllm::cpu::panel_gemm(isa, g, threads);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p1);
  const double cpu =
      static_cast<double>(p1.tv_sec - p0.tv_sec) + 1e-9 * static_cast<double>(p1.tv_nsec - p0.tv_nsec);
  const double fma = static_cast<double>(kM * kN * kK) * static_cast<double>(st.iterations());
  st.counters["GFMA"] = benchmark::Counter(fma / 1e9, benchmark::Counter::kIsRate);
  st.counters["GFMA_cpu"] = fma / cpu / 1e9;
  st.counters["peak_frac_cpu"] = fma / cpu / g_peak;  // cpu sums the threads: a per-thread rate
  st.SetLabel(std::string(dllm::isa_name(isa)) + (q6 ? " Q6_K rows" : " f32 rows"));
}

void BM_dequant_q6k(benchmark::State& st) {
  const Operands& o = operands();
  std::vector<float> row(kN);
  int64_t id = 0;
  for (auto _ : st) {
    dllm::quant::dequantize_row(dllm::gguf::GgmlType::Q6_K, &o.q6[id * (kN / 256)], row.data(), kN);
    benchmark::DoNotOptimize(row.data());
    id = (id + 1) % kK;
  }
  st.counters["values_per_s"] =
      benchmark::Counter(static_cast<double>(kN), benchmark::Counter::kIsIterationInvariantRate);
}

void paths(benchmark::internal::Benchmark* b) {
  for (const Isa isa : {Isa::kAmx, Isa::kAvx512Vnni, Isa::kAvx2, Isa::kScalar})
    for (const int threads : {1, 2})
      for (const int q6 : {0, 1}) {
        if (isa == Isa::kScalar && (threads == 2 || q6)) continue;  // the reference, once
        b->Args({static_cast<int64_t>(isa), threads, q6});
      }
}

BENCHMARK(BM_panel_gemm)->Apply(paths)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_dequant_q6k)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  std::string command;
  bool has_out = false, listing = false;
  for (int i = 0; i < argc; ++i) {
    command += (i ? " " : "") + std::string(argv[i]);
    if (std::strncmp(argv[i], "--benchmark_out=", 16) == 0) has_out = true;
    if (std::strncmp(argv[i], "--benchmark_list_tests", 22) == 0) listing = true;
  }
  const bool zmm = dllm::isa_supported(Isa::kAvx512Vnni);
  if (!dllm::isa_supported(Isa::kAvx2)) {
    std::fprintf(stderr, "panel_gemm_bench: no AVX2 here, so no SIMD path to measure\n");
    return 1;
  }
  g_peak = measure_peak(zmm);
  std::printf("f32 FMA peak: %.1f G multiply-adds per CPU second, one thread (%s vfmadd231ps, median of 7)\n",
              g_peak / 1e9, zmm ? "zmm" : "ymm");
  benchmark::AddCustomContext("peak_f32_fma_per_thread_g", std::to_string(g_peak / 1e9));
  benchmark::AddCustomContext("peak_op", zmm ? "zmm vfmadd231ps (16 multiply-adds)" : "ymm vfmadd231ps (8)");
  benchmark::AddCustomContext("machine", dllm::bench::cpu_model());
  benchmark::AddCustomContext("vendor", dllm::bench::cpu_vendor());
  benchmark::AddCustomContext("isa_flags", dllm::bench::cpu_isa_flags());
  benchmark::AddCustomContext("commit", dllm::bench::build_commit());
  benchmark::AddCustomContext("command", command);
  std::vector<char*> args(argv, argv + argc);
  std::string out_arg, fmt_arg = "--benchmark_out_format=json";
  if (!has_out && !listing) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    out_arg = "--benchmark_out=" + (dllm::bench::repo_root() / "bench" / "results" /
                                    ("panel-gemm-" + std::string(stamp) + ".json"))
                                       .string();
    args.push_back(out_arg.data());
    args.push_back(fmt_arg.data());
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
