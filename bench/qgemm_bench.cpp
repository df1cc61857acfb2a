// Microbenchmark of the packed GEMM (make_matrix) on LLaDA-8B's projection shapes (Q4_K, Q6_K) and on
// the attention projections of the mixture-of-experts models (Q8_0, Q5_K), with the core's int8 peak
// measured in the same run. Performance only: correctness is tests/cpu/qgemm_test.
//
// 1. Peak: a tight loop of independent zmm vpdpbusd (inline asm, so the compiler cannot reorder or
//    drop it; 8..14 accumulators to cover the instruction's latency, best of those counts) on one
//    thread, repeated; the median is the peak (1 vpdpbusd zmm = 64 multiply-adds = 128 int8 ops).
//    The ymm (AVX-VNNI) peak is measured too, for reference. On a CPU without AVX-512 VNNI the
//    reference peak is that of ymm vpmaddubsw instead (32 u8 x s8 products, 64 int8 ops, the
//    instruction every AVX2 int8 kernel here issues at least once per 32 products); the file's
//    context says which ("peak_reference").
//    Where the CPU and OS run AMX (base/isa.h, Isa::kAmx), also the tile peak: a loop of tdpbusd into
//    4 or 6 independent 16 x 16 int32 accumulators (tmm2..tmm7; A and B fixed in tmm0, tmm1), each
//    instruction 16 x 16 x 64 multiply-adds = 32768 int8 ops; elsewhere the file's context says why
//    it was skipped ("peak_tile").
// 2. Memory read bandwidth (read_bandwidth.h): 1 and 2 threads reading a 2 GiB buffer with zmm loads,
//    median of 7 reads, per second of wall time and per CPU second, in the file's context ("read_bw_*"):
//    the floor of a step that streams its weights.
// 3. GEMM: y = W x for W = n_out x n_in (4096x4096, 12288x4096, 4096x12288 Q4_K and Q6_K, and the
//    126464x4096 Q6_K LM head at 32 tokens), L = 64, 141, 256, 512 tokens; the MoE attention shapes
//    (Q8_0 attn_k / attn_v, Q5_K attn_output) at L = 32 and 141; the MoE expert shapes (one expert,
//    and 64 experts stacked so the weights stream from memory) at L = 18 in 128-row items; DiffusionGemma's
//    expert down (Q5_0, and the same shapes as Q8_0, what Q5_0 ran as before Q50Block) at L = 2 and 16;
//    LLaDA2-mini's compact Q6_K expert down (one and 64 stacked) at L = 2 and 16 and its attn_qkv
//    (Q4_K and Q6_K) and attn_output at L = 2 and 32; and the whole MoE block (cpu::MoeFfn) on one LLaDA-MoE
//    layer at L = 141 with the rows spread over the experts (BM_moe_block); every supported SIMD path (amx
//    too, with tile_peak_frac_cpu = Gops_cpu over the tile peak), 1 and 2 threads splitting the rows as the
//    forward pass does (about 64 work items per matrix, OpenMP dynamic schedule). Counters: Gops = 2 n_out
//    n_in L / wall time / 1e9 and peak_frac = that over (threads x the reference peak); Gops_cpu and
//    peak_frac_cpu use the CPU time summed over the threads instead: the per-thread rate while running (on a
//    shared machine wall time also counts the time slices other processes took). The peak is per second of
//    thread CPU time for the same reason.
//
// Usage: qgemm_bench [--peaks-only] [--note=TEXT] [google-benchmark flags]. --peaks-only measures 1. and 2.
// only and prints them as JSON ({"context": {...}}) on stdout, writing no file. Without --benchmark_out it
// writes bench/results/qgemm-<host>-<utc time, YYYYMMDDTHHMMSSZ>.json (machine, commit, command and peaks in
// "context"), filtered or not: give an exploratory run --benchmark_out=/tmp/FILE.json. Use
// --benchmark_repetitions=N --benchmark_enable_random_interleaving=true for A/B-fair medians, and taskset to
// pin threads.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <time.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/isa.h"
#include "bench_util.h"
#include "cpu/kernels/qgemm.h"
#include "cpu/kernels/qgemm_bytes.h"
#include "cpu/matmul.h"
#include "cpu/moe.h"
#include "model/arch.h"
#include "model/config.h"
#include "model/model.h"
#include "quant/quant.h"
#include "read_bandwidth.h"

namespace {

using dllm::Isa;
using dllm::gguf::GgmlType;

// ---------------------------------------------------------------------------------------------------
// Peak probe. Each asm body runs n iterations of `acc` independent vpdpbusd (zmm2.. or ymm2..), all
// reading the same two sources, so the only limit is the issue rate of the instruction.

#define DLLM_DP_Z(i) "vpdpbusd %%zmm1, %%zmm0, %%zmm" #i "\n\t"
#define DLLM_DP_Y(i) "%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #i "\n\t"
#define DLLM_DP_M(i) "vpmaddubsw %%ymm1, %%ymm0, %%ymm" #i "\n\t"

// The instruction a peak loop repeats.
enum class PeakOp { kZmmDpbusd, kYmmDpbusd, kYmmMaddubs };
constexpr const char* peak_op_name(PeakOp op) {
  return op == PeakOp::kZmmDpbusd   ? "zmm vpdpbusd"
         : op == PeakOp::kYmmDpbusd ? "ymm vpdpbusd"
                                    : "ymm vpmaddubsw";
}

template <int kAcc, PeakOp kOp>
void dp_loop(int64_t n) {
  static_assert(kAcc == 8 || kAcc == 10 || kAcc == 12 || kAcc == 14);
  constexpr bool kZmm = kOp == PeakOp::kZmmDpbusd;
  if constexpr (kZmm) {
    asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n\tvpxord %%zmm1, %%zmm1, %%zmm1\n\t" ::: "xmm0", "xmm1");
  } else {
    asm volatile("vpxor %%ymm0, %%ymm0, %%ymm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\t" ::: "xmm0", "xmm1");
  }
#define DLLM_BODY(D)                                                                                 \
  if constexpr (kAcc == 8) {                                                                         \
    asm volatile("1:\n\t" D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) "dec %0\n\tjnz 1b\n\t"             \
                 : "+r"(n)::"xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "cc");   \
  } else if constexpr (kAcc == 10) {                                                                 \
    asm volatile("1:\n\t" D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11) "dec %0\n\tjnz 1b\n\t" \
                 : "+r"(n)::"xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                   "xmm11", "cc");                                                                   \
  } else if constexpr (kAcc == 12) {                                                                 \
    asm volatile("1:\n\t" D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11) D(12)                  \
                     D(13) "dec %0\n\tjnz 1b\n\t"                                                    \
                 : "+r"(n)::"xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                   "xmm11", "xmm12", "xmm13", "cc");                                                 \
  } else {                                                                                           \
    asm volatile("1:\n\t" D(2) D(3) D(4) D(5) D(6) D(7) D(8) D(9) D(10) D(11) D(12) D(13) D(14)      \
                     D(15) "dec %0\n\tjnz 1b\n\t"                                                    \
                 : "+r"(n)::"xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
                   "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc");                               \
  }
  if constexpr (kZmm) {
    DLLM_BODY(DLLM_DP_Z)
  } else if constexpr (kOp == PeakOp::kYmmDpbusd) {
    DLLM_BODY(DLLM_DP_Y)
  } else {
    DLLM_BODY(DLLM_DP_M)
  }
#undef DLLM_BODY
  asm volatile("vzeroupper" ::: "memory");
}

double clock_s(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// int8 ops per second of one run of dp_loop<kAcc> (2 ops per product: zmm vpdpbusd 64 products,
// ymm vpdpbusd and vpmaddubsw 32), per second of this thread's CPU time: the machine is shared, and
// time slices lost to other processes are not the core's speed.
template <int kAcc, PeakOp kOp>
double dp_rate(int64_t n) {
  const double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
  dp_loop<kAcc, kOp>(n);
  const double s = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
  return double(n) * kAcc * (kOp == PeakOp::kZmmDpbusd ? 128 : 64) / s;
}

struct Peak {
  double median = 0, best = 0;
  int accumulators = 0;
  std::string by_accumulators;  ///< first-pass G ops/s for 8, 10, 12, 14 chains (latency vs throughput)
};

// Median over `reps` runs of the accumulator count that did best on a first pass.
template <PeakOp kZmm>
Peak measure_peak(int reps) {
  const int64_t n = 20'000'000;  // ~0.1 s per run at 2 vpdpbusd per cycle
  dp_rate<12, kZmm>(n / 4);      // warm up the clock
  const double r[4] = {dp_rate<8, kZmm>(n), dp_rate<10, kZmm>(n), dp_rate<12, kZmm>(n), dp_rate<14, kZmm>(n)};
  const int best_i = int(std::max_element(r, r + 4) - r);
  std::printf("%s, G int8 ops/s by accumulators 8/10/12/14: %.0f %.0f %.0f %.0f\n", peak_op_name(kZmm),
              r[0] / 1e9, r[1] / 1e9, r[2] / 1e9, r[3] / 1e9);
  const int accs[4] = {8, 10, 12, 14};
  char by_acc[96];
  std::snprintf(by_acc, sizeof by_acc, "%.0f %.0f %.0f %.0f", r[0] / 1e9, r[1] / 1e9, r[2] / 1e9, r[3] / 1e9);
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) {
    switch (best_i) {
      case 0:
        v.push_back(dp_rate<8, kZmm>(n));
        break;
      case 1:
        v.push_back(dp_rate<10, kZmm>(n));
        break;
      case 2:
        v.push_back(dp_rate<12, kZmm>(n));
        break;
      default:
        v.push_back(dp_rate<14, kZmm>(n));
        break;
    }
  }
  std::sort(v.begin(), v.end());
  return Peak{v[v.size() / 2], v.back(), accs[best_i], by_acc};
}

Peak g_peak_zmm;  // the reference peak: zmm vpdpbusd, or ymm vpmaddubsw without AVX-512 VNNI

// The tile peak: kAcc independent tdpbusd per iteration (inline asm, so this file needs no -mamx
// flags; run only where isa_supported(Isa::kAmx), whose detection also asked the OS for the tile
// state). The 64-byte LDTILECFG operand, palette 1: tmm0..tmm7 all 16 rows x 64 bytes.
template <int kAcc>
double tile_rate(int64_t n) {
  static_assert(kAcc == 4 || kAcc == 6);
  alignas(64) uint8_t cfg[64] = {};
  cfg[0] = 1;
  for (int t = 0; t < 8; ++t) {
    cfg[16 + 2 * t] = 64;  // colsb, little-endian uint16
    cfg[48 + t] = 16;      // rows
  }
  asm volatile("ldtilecfg %0\n\ttilezero %%tmm0\n\ttilezero %%tmm1\n\t" ::"m"(cfg) : "memory");
  int64_t left = n;  // the loop counts this down to 0; n stays for the rate
  const double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
  if constexpr (kAcc == 4) {
    asm volatile(
        "1:\n\ttdpbusd %%tmm1, %%tmm0, %%tmm4\n\ttdpbusd %%tmm1, %%tmm0, %%tmm5\n\t"
        "tdpbusd %%tmm1, %%tmm0, %%tmm6\n\ttdpbusd %%tmm1, %%tmm0, %%tmm7\n\tdec %0\n\tjnz 1b\n\t"
        : "+r"(left)::"cc");
  } else {
    asm volatile(
        "1:\n\ttdpbusd %%tmm1, %%tmm0, %%tmm2\n\ttdpbusd %%tmm1, %%tmm0, %%tmm3\n\t"
        "tdpbusd %%tmm1, %%tmm0, %%tmm4\n\ttdpbusd %%tmm1, %%tmm0, %%tmm5\n\t"
        "tdpbusd %%tmm1, %%tmm0, %%tmm6\n\ttdpbusd %%tmm1, %%tmm0, %%tmm7\n\tdec %0\n\tjnz 1b\n\t"
        : "+r"(left)::"cc");
  }
  const double s = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
  asm volatile("tilerelease" ::: "memory");
  return double(n) * kAcc * 16 * 16 * 64 * 2 / s;
}

// Median of `reps` runs of the better of 4 and 6 accumulators (first pass).
Peak measure_tile_peak(int reps) {
  const int64_t n = 2'000'000;
  tile_rate<6>(n / 4);  // warm up
  const double r4 = tile_rate<4>(n), r6 = tile_rate<6>(n);
  std::printf("amx tdpbusd, G int8 ops/s by accumulators 4/6: %.0f %.0f\n", r4 / 1e9, r6 / 1e9);
  char by_acc[64];
  std::snprintf(by_acc, sizeof by_acc, "%.0f %.0f", r4 / 1e9, r6 / 1e9);
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) v.push_back(r6 >= r4 ? tile_rate<6>(n) : tile_rate<4>(n));
  std::sort(v.begin(), v.end());
  return Peak{v[v.size() / 2], v.back(), r6 >= r4 ? 6 : 4, by_acc};
}

Peak g_peak_tile;  // median 0 where the CPU or OS has no AMX

// ---------------------------------------------------------------------------------------------------
// Random but valid weights (finite f16 scales; speed does not depend on the values) and activations.

struct Shape {
  const char* name;
  GgmlType type;
  int64_t n_out, n_in;
  /// Output rows per work item; 0: the forward pass's split (chunk_rows). The expert shapes use the
  /// MoE block's 128-row items (src/cpu/moe.cpp expert_chunk_rows).
  int64_t chunk = 0;
  /// Token count (also run at 2); 0: by the shape's kind (see main).
  int64_t tokens = 0;
  /// Packed as WeightLayout::kCompact (Q6_K as Q6KBlock), as the MoE block packs the experts of a
  /// model whose steps give each expert few rows (src/cpu/moe.cpp expert_layout).
  bool compact = false;
};

std::vector<uint8_t> random_blocks(const Shape& s) {
  using namespace dllm::quant;
  const size_t block_bytes = s.type == GgmlType::Q4_K   ? sizeof(block_q4_K)
                             : s.type == GgmlType::Q5_K ? sizeof(block_q5_K)
                             : s.type == GgmlType::Q8_0 ? sizeof(block_q8_0)
                             : s.type == GgmlType::Q5_0 ? sizeof(block_q5_0)
                                                        : sizeof(block_q6_K);
  const bool b32 = s.type == GgmlType::Q8_0 || s.type == GgmlType::Q5_0;
  const size_t n_blocks = size_t(s.n_out * (s.n_in / (b32 ? 32 : 256)));
  std::vector<uint8_t> bytes(n_blocks * block_bytes);
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, std::min<size_t>(8, bytes.size() - i));
  }
  const uint16_t d = dllm::quant::fp32_to_fp16(1e-3f);
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* p = bytes.data() + b * block_bytes;
    if (s.type == GgmlType::Q4_K) {
      auto* blk = reinterpret_cast<block_q4_K*>(p);
      blk->d = blk->dmin = d;
    } else if (s.type == GgmlType::Q5_K) {
      auto* blk = reinterpret_cast<block_q5_K*>(p);
      blk->d = blk->dmin = d;
    } else if (s.type == GgmlType::Q8_0) {
      reinterpret_cast<block_q8_0*>(p)->d = d;
    } else if (s.type == GgmlType::Q5_0) {
      reinterpret_cast<block_q5_0*>(p)->d = d;
    } else {
      reinterpret_cast<block_q6_K*>(p)->d = d;
    }
  }
  return bytes;
}

/// A packed matrix of s's shape and type over random_blocks(s), for `isa` (its own copy of the bytes).
std::unique_ptr<dllm::cpu::Matrix> random_matrix(const Shape& s, Isa isa) {
  const std::vector<uint8_t> bytes = random_blocks(s);
  dllm::gguf::TensorInfo t;
  t.name = s.name;
  t.n_dims = 2;
  t.ne[0] = s.n_in;
  t.ne[1] = s.n_out;
  t.type = s.type;
  t.n_bytes = bytes.size();
  return dllm::cpu::make_matrix(
      t, bytes.data(), isa, s.compact ? dllm::cpu::WeightLayout::kCompact : dllm::cpu::WeightLayout::kFast);
}

// One packed matrix at a time (the LM head is 430 MB packed): rebuilt when the shape or ISA changes.
struct Cache {
  std::string key;
  std::unique_ptr<dllm::cpu::Matrix> m;
};
Cache g_cache;

const dllm::cpu::Matrix& matrix(const Shape& s, Isa isa) {
  const std::string key = std::string(s.name) + "/" + dllm::isa_name(isa);
  if (g_cache.key != key) {
    g_cache.m.reset();
    g_cache.m = random_matrix(s, isa);
    g_cache.key = key;
  }
  return *g_cache.m;
}

struct Acts {
  std::vector<float> f32;
  std::vector<dllm::quant::block_q8_K> q8k;
  std::vector<int16_t> bs32;  // made once per input, as the forward pass does
  std::vector<uint8_t> u8;
  std::vector<dllm::quant::block_q8_0> q80;
  std::vector<uint8_t> u80;
};

Acts random_acts(int64_t n_tokens, int64_t n_in) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Acts a;
  a.f32.resize(size_t(n_tokens * n_in));
  for (float& v : a.f32) v = nd(rng);
  if (n_in % 256 == 0) {  // the K-quants' activations (rows of 704, DiffusionGemma's expert down, have none)
    a.q8k.resize(size_t(n_tokens * n_in / 256));
    for (int64_t t = 0; t < n_tokens; ++t) {
      dllm::quant::quantize_row_q8_K(a.f32.data() + t * n_in, a.q8k.data() + t * (n_in / 256), n_in);
    }
    a.bs32.resize(a.q8k.size() * 8);
    dllm::cpu::qgemm::make_bs32(a.q8k.data(), n_tokens, n_in / 256, a.bs32.data());
    a.u8.resize(a.q8k.size() * 256);
    dllm::cpu::qgemm::make_u8(a.q8k.data(), n_tokens, n_in / 256, a.u8.data());
  }
  a.q80.resize(size_t(n_tokens * n_in / 32));
  for (int64_t t = 0; t < n_tokens; ++t) {
    dllm::quant::quantize_row_q8_0(a.f32.data() + t * n_in, a.q80.data() + t * (n_in / 32), n_in);
  }
  a.u80.resize(a.f32.size());
  dllm::cpu::qgemm::make_u8_q8_0(a.q80.data(), n_tokens, n_in / 32, a.u80.data());
  return a;
}

// The forward pass's split (src/cpu/forward.cpp chunk_rows): about 64 work items per matrix.
int64_t chunk_rows(const dllm::cpu::Matrix& m) {
  const int64_t g = std::max<int64_t>(1, m.row_granularity());
  return g * std::max<int64_t>(1, m.n_out() / (g * 64));
}

void BM_gemm(benchmark::State& state, Shape s, Isa isa, int64_t n_tokens, int n_threads) {
  const dllm::cpu::Matrix& m = matrix(s, isa);
  const Acts a = random_acts(n_tokens, s.n_in);
  const dllm::cpu::Activations x{a.f32.data(),  a.q8k.data(), n_tokens,     s.n_in,
                                 a.bs32.data(), a.u8.data(),  a.q80.data(), a.u80.data()};
  std::vector<float> y(size_t(n_tokens * s.n_out));
  const int64_t chunk = s.chunk > 0 ? s.chunk : chunk_rows(m);
  const int64_t n_items = (s.n_out + chunk - 1) / chunk;
  const double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), real0 = clock_s(CLOCK_MONOTONIC);
  for (auto _ : state) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
    for (int64_t item = 0; item < n_items; ++item) {
      m.multiply(x, item * chunk, std::min(item * chunk + chunk, s.n_out), y.data(), s.n_out);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0, real_s = clock_s(CLOCK_MONOTONIC) - real0;
  const double ops = 2.0 * double(s.n_out) * double(s.n_in) * double(n_tokens) * double(state.iterations());
  // Gops: wall-clock rate of the whole call. Gops_cpu: per second of CPU time summed over the threads,
  // i.e. the rate of one thread while it runs (robust to time slices lost on a shared machine).
  state.counters["Gops"] = ops / real_s / 1e9;
  state.counters["peak_frac"] = ops / real_s / (g_peak_zmm.median * n_threads);
  state.counters["Gops_cpu"] = ops / cpu_s / 1e9;
  state.counters["peak_frac_cpu"] = ops / cpu_s / g_peak_zmm.median;
  if (isa == Isa::kAmx && g_peak_tile.median > 0)
    state.counters["tile_peak_frac_cpu"] = ops / cpu_s / g_peak_tile.median;
  state.counters["threads"] = n_threads;
  state.counters["L"] = double(n_tokens);
}

// The whole MoE FFN block (cpu::MoeFfn::forward) on one LLaDA-MoE-7B-A1B layer: 64 experts of
// n_ff_exp 1024 over n_embd 2048 (ffn_gate / ffn_up Q4_K, ffn_down `down` type: Q4_K, or Q6_K as in
// llama-quantize's use_more_bits layers), 8 used, L distinct input rows of RMS 1 and a router of
// N(0, 1 / n_embd) weights, so the router logits spread about 1 and the rows fall on the experts
// about evenly (L x 8 / 64 each, as a trained model's balanced routing would; the synthetic GGUF's
// identical mask rows instead all pick the same few experts, see docs/kernels.md). Counters as
// BM_gemm's, over the expert GEMMs' multiply-adds (3 n_embd n_ff_exp per routed row) and the CPU
// time of the block's gate/up and down passes (MoeTimes, as DLLM_PROFILE reports it); block_Gops_cpu
// is over the whole block's CPU time (routing, rounding, SwiGLU and the weighted sum included).
void BM_moe_block(benchmark::State& state, GgmlType down, Isa isa, int64_t n_rows, int n_threads) {
  using dllm::cpu::MoePass;
  dllm::model::ModelConfig c;
  c.arch = &dllm::model::kLladaMoeArch;
  c.arch_name = "llada-moe";
  c.n_embd = 2048;
  c.n_expert = 64;
  c.n_expert_used = 8;
  c.n_ff_exp = 1024;
  const Shape gate_s{"ffn_gate_exps", GgmlType::Q4_K, c.n_ff_exp, c.n_embd};
  const Shape down_s{"ffn_down_exps", down, c.n_embd, c.n_ff_exp};
  std::vector<dllm::cpu::MoeExperts> layers(1);
  for (int64_t e = 0; e < c.n_expert; ++e) {
    // Each expert its own packed copy, so the block streams 64 experts' weights as a layer does.
    layers[0].gate.push_back(random_matrix(gate_s, isa));
    layers[0].up.push_back(random_matrix(gate_s, isa));
    layers[0].down.push_back(random_matrix(down_s, isa));
  }
  dllm::model::LayerWeights lw;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> router(0.0f, 1.0f / std::sqrt(float(c.n_embd)));
  lw.ffn_gate_inp.resize(size_t(c.n_expert * c.n_embd));
  for (float& v : lw.ffn_gate_inp) v = router(rng);
  const Acts a = random_acts(n_rows, c.n_embd);
  std::vector<float> out(size_t(n_rows * c.n_embd));
  dllm::cpu::MoeFfn block(c, layers, n_rows, isa, n_threads);
  block.set_timing(true);
  const double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  for (auto _ : state) {
    block.forward(lw, layers[0], a.f32.data(), n_rows, out.data(), c.n_embd);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double block_cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  const dllm::cpu::MoeTimes& t = block.times();
  const double gemm_cpu_s = t.cpu_s[int(MoePass::kGateUp)] + t.cpu_s[int(MoePass::kDown)];
  const double gemm_wall_s = t.wall_s[int(MoePass::kGateUp)] + t.wall_s[int(MoePass::kDown)];
  const double ops = 2.0 * t.expert_macs;
  state.counters["Gops"] = ops / gemm_wall_s / 1e9;
  state.counters["peak_frac"] = ops / gemm_wall_s / (g_peak_zmm.median * n_threads);
  state.counters["Gops_cpu"] = ops / gemm_cpu_s / 1e9;
  state.counters["peak_frac_cpu"] = ops / gemm_cpu_s / g_peak_zmm.median;
  state.counters["block_Gops_cpu"] = ops / block_cpu_s / 1e9;
  // How evenly the rows fell: the share of routed rows on experts with 9-32 rows (bucket 3).
  double rows = 0;
  for (int b = 0; b < dllm::cpu::MoeTimes::kBuckets; ++b) rows += double(t.expert_rows[b]);
  state.counters["rows_on_9_to_32_row_experts"] = rows > 0 ? double(t.expert_rows[3]) / rows : 0;
  state.counters["threads"] = n_threads;
  state.counters["L"] = double(n_rows);
}

using dllm::bench::repo_root;
using dllm::bench::run_command;

// The results file's context, kept here too for --peaks-only, which runs no benchmark (Google Benchmark
// writes no file then).
std::map<std::string, std::string> g_context;
void add_context(const std::string& key, const std::string& value) {
  benchmark::AddCustomContext(key, value);
  g_context[key] = value;
}

}  // namespace

int main(int argc, char** argv) {
  using dllm::isa_supported;
  const std::filesystem::path root = repo_root();
  std::string command;
  bool has_out = false;
  bool listing = false;  // --benchmark_list_tests runs nothing, so it must not write (or replace) a file
  bool peaks_only = false;
  std::string note;  // --note=TEXT: free text for the results file (e.g. that the machine was shared)
  for (int i = 0; i < argc; ++i) {
    command += (i ? " " : "") + std::string(argv[i]);
    if (std::strncmp(argv[i], "--benchmark_out=", 16) == 0) has_out = true;
    const std::string arg = argv[i];
    if (arg == "--peaks-only") peaks_only = true;
    if (arg.rfind("--note=", 0) == 0) note = arg.substr(7);
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true" ||
        arg == "--benchmark_list_tests=1") {
      listing = true;
    }
  }

  // Peaks first, on the calling thread (pin it with taskset for a clean figure).
  if (isa_supported(Isa::kAvx512Vnni)) {
    g_peak_zmm = measure_peak<PeakOp::kZmmDpbusd>(7);
    std::printf("zmm vpdpbusd peak: %.1f G int8 ops/s per core (median of 7; best %.1f; %d accumulators)\n",
                g_peak_zmm.median / 1e9, g_peak_zmm.best / 1e9, g_peak_zmm.accumulators);
    add_context("peak_reference", peak_op_name(PeakOp::kZmmDpbusd));
    add_context("peak_zmm_vpdpbusd_gops", std::to_string(g_peak_zmm.median / 1e9));
    add_context("peak_zmm_vpdpbusd_gops_best", std::to_string(g_peak_zmm.best / 1e9));
    add_context("peak_zmm_accumulators", std::to_string(g_peak_zmm.accumulators));
    add_context("peak_zmm_gops_by_accumulators_8_10_12_14", g_peak_zmm.by_accumulators);
    if (isa_supported(Isa::kAvxVnni)) {
      const Peak y = measure_peak<PeakOp::kYmmDpbusd>(7);
      std::printf("ymm vpdpbusd peak: %.1f G int8 ops/s per core (median of 7; best %.1f; %d accumulators)\n",
                  y.median / 1e9, y.best / 1e9, y.accumulators);
      add_context("peak_ymm_vpdpbusd_gops", std::to_string(y.median / 1e9));
    }
  } else if (isa_supported(Isa::kAvx2)) {
    // No zmm vpdpbusd here: the AVX2 paths' own ceiling, vpmaddubsw (peak_frac counters use it).
    g_peak_zmm = measure_peak<PeakOp::kYmmMaddubs>(7);
    std::printf("ymm vpmaddubsw peak: %.1f G int8 ops/s per core (median of 7; best %.1f; %d accumulators)\n",
                g_peak_zmm.median / 1e9, g_peak_zmm.best / 1e9, g_peak_zmm.accumulators);
    add_context("peak_reference",
                std::string(peak_op_name(PeakOp::kYmmMaddubs)) + " (no AVX-512 VNNI on this CPU)");
    add_context("peak_ymm_vpmaddubsw_gops", std::to_string(g_peak_zmm.median / 1e9));
    add_context("peak_ymm_vpmaddubsw_gops_best", std::to_string(g_peak_zmm.best / 1e9));
    add_context("peak_ymm_vpmaddubsw_gops_by_accumulators_8_10_12_14", g_peak_zmm.by_accumulators);
  } else {
    std::fprintf(stderr, "qgemm_bench: no AVX2 here, so no SIMD path to measure\n");
    return 1;
  }
  if (isa_supported(Isa::kAmx)) {
    g_peak_tile = measure_tile_peak(7);
    std::printf("amx tdpbusd peak: %.1f G int8 ops/s per core (median of 7; best %.1f; %d accumulators)\n",
                g_peak_tile.median / 1e9, g_peak_tile.best / 1e9, g_peak_tile.accumulators);
    add_context("peak_tile_tdpbusd_gops", std::to_string(g_peak_tile.median / 1e9));
    add_context("peak_tile_tdpbusd_gops_best", std::to_string(g_peak_tile.best / 1e9));
    add_context("peak_tile_gops_by_accumulators_4_6", g_peak_tile.by_accumulators);
  } else {
    const std::string why = "skipped: amx " + dllm::amx_status(Isa::kScalar);
    std::printf("amx tdpbusd peak: %s\n", why.c_str());
    add_context("peak_tile", why);
  }
  // Read bandwidth: 2 GiB, several times the last-level cache of the machines this runs on (the
  // 480 MiB L3 that lscpu reports on the Xeon VM included), so the reads come from memory.
  for (const int threads : {1, 2}) {
    const dllm::bench::ReadBandwidth bw = dllm::bench::measure_read_bandwidth(threads, size_t{2} << 30, 7);
    std::printf(
        "read bandwidth, %d thread(s), %s loads, %zu MiB: %.1f GB/s (median of 7; best %.1f; per CPU second "
        "%.1f)\n",
        threads, bw.loads.c_str(), bw.bytes >> 20, bw.median_gbs, bw.best_gbs, bw.median_gbs_cpu);
    const std::string key = "read_bw_" + bw.loads + "_" + std::to_string(threads) + "t_gbs";
    add_context(key, std::to_string(bw.median_gbs));
    add_context(key + "_best", std::to_string(bw.best_gbs));
    add_context(key + "_cpu", std::to_string(bw.median_gbs_cpu));
  }
  add_context("read_bw_buffer_bytes", std::to_string(size_t{2} << 30));
  add_context("machine", dllm::bench::cpu_model());
  add_context("vendor", dllm::bench::cpu_vendor());
  add_context("isa_flags", dllm::bench::cpu_isa_flags());
  add_context("commit", dllm::bench::build_commit());
  add_context("command", command);
  // Spinning OpenMP threads count as CPU time; passive waiting keeps the per-thread rate honest on a
  // shared machine, so the policy belongs with the figures.
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  add_context("OMP_WAIT_POLICY", wait_policy ? wait_policy : "(unset)");
  if (!note.empty()) add_context("note", note);
  if (peaks_only) {  // the context alone, as JSON on stdout (bench/llada2_baseline.py reads it)
    std::printf("%s\n", nlohmann::json{{"context", g_context}}.dump(1).c_str());
    return 0;
  }

  const Shape shapes[] = {
      {"4096x4096_Q4_K", GgmlType::Q4_K, 4096, 4096},      // attn_q, attn_k, attn_v, attn_output
      {"4096x4096_Q6_K", GgmlType::Q6_K, 4096, 4096},      // attn_v in the Q6_K layers
      {"12288x4096_Q4_K", GgmlType::Q4_K, 12288, 4096},    // ffn_gate, ffn_up
      {"4096x12288_Q4_K", GgmlType::Q4_K, 4096, 12288},    // ffn_down
      {"4096x12288_Q6_K", GgmlType::Q6_K, 4096, 12288},    // ffn_down in the Q6_K layers
      {"126464x4096_Q6_K", GgmlType::Q6_K, 126464, 4096},  // output (LM head), 32 rows
      // Mixture-of-experts attention (Q4_K_M gives attn_k / attn_v Q8_0 and attn_output Q5_K).
      // LLaDA-MoE-7B-A1B: n_embd 2048, 16 heads of 128, 16 kv heads; RND1 (Qwen3-30B-A3B): n_embd 2048, 32
      // heads of 128, 4 kv heads (docs/kernels.md names the sources).
      {"2048x2048_Q8_0", GgmlType::Q8_0, 2048, 2048},  // LLaDA-MoE attn_k, attn_v
      {"512x2048_Q8_0", GgmlType::Q8_0, 512, 2048},    // RND1 attn_k, attn_v
      {"2048x2048_Q5_K", GgmlType::Q5_K, 2048, 2048},  // LLaDA-MoE attn_output
      {"2048x4096_Q5_K", GgmlType::Q5_K, 2048, 4096},  // RND1 attn_output
      // Mixture-of-experts expert GEMMs (LLaDA-MoE-7B-A1B: 64 experts of n_ff_exp 1024 over n_embd
      // 2048): one expert's ffn_gate/up (L3-resident: the kernel with its weights in cache), and all 64
      // experts' ffn_gate stacked into one matrix, so that each 128-row item streams its weights from
      // memory as the MoE block's items do; at L = 18, the rows an expert sees at a 141-token canvas
      // (141 x 8 / 64).
      {"1024x2048_Q4_K", GgmlType::Q4_K, 1024, 2048, 128},    // one expert's ffn_gate / ffn_up
      {"65536x2048_Q4_K", GgmlType::Q4_K, 65536, 2048, 128},  // 64 experts' ffn_gate_exps
      {"2048x1024_Q6_K", GgmlType::Q6_K, 2048, 1024, 128},    // one expert's ffn_down (Q6_K layers)
      // DiffusionGemma 26B-A4B's ffn_down_exps (128 experts of n_ff_exp 704 over n_embd 2816; Q5_0 in
      // its Q4_K_M files, since 704 is not whole super-blocks): one expert and all 128 stacked, at
      // L = 16 (a 256-token canvas x 8 used / 128) and at 2 (a lightly routed expert). The Q8_0 twins are
      // what Q5_0 ran as before Q50Block (converted to Q8_0, packed Q80Block): same shapes, for the A/B.
      {"2816x704_Q5_0", GgmlType::Q5_0, 2816, 704, 128, 16},
      {"2816x704_Q8_0", GgmlType::Q8_0, 2816, 704, 128, 16},
      {"360448x704_Q5_0", GgmlType::Q5_0, 360448, 704, 128, 16},
      {"360448x704_Q8_0", GgmlType::Q8_0, 360448, 704, 128, 16},
      // DiffusionGemma 26B-A4B's ffn_gate_up_exps (Q4_K, 2 x 704 outputs over 2816): one expert and all
      // 128 stacked, at L = 16 and 2 as above; its attention and dense projections over a 256-row
      // canvas (attn_q 4096 x 2816).
      {"1408x2816_Q4_K", GgmlType::Q4_K, 1408, 2816, 128, 16},
      {"180224x2816_Q4_K", GgmlType::Q4_K, 180224, 2816, 128, 16},
      {"4096x2816_Q4_K", GgmlType::Q4_K, 4096, 2816},
      // LLaDA2.0-mini's ffn_down_exps in its Q6_K layers (256 experts of n_ff_exp 512 over n_embd 2048),
      // packed compact as its MoE block does: one expert, and 64 stacked (streamed from memory), at
      // L = 16 (a 32-row block's rows crowding onto few experts) and 2.
      {"2048x512_Q6_K_compact", GgmlType::Q6_K, 2048, 512, 128, 16, true},
      {"131072x512_Q6_K_compact", GgmlType::Q6_K, 131072, 512, 128, 16, true},
      // LLaDA2.0-mini's attention over a 32-row block step: the fused attn_qkv (16 + 4 + 4 heads of 128
      // over n_embd 2048; Q6_K in some of its Q4_K_M layers) and attn_output.
      {"3072x2048_Q4_K", GgmlType::Q4_K, 3072, 2048, 0, 32},
      {"3072x2048_Q6_K", GgmlType::Q6_K, 3072, 2048, 0, 32},
      {"2048x2048_Q4_K", GgmlType::Q4_K, 2048, 2048, 0, 32},
  };
  for (const Shape& s : shapes) {
    const bool head = s.n_out == 126464;
    const bool moe = s.type == GgmlType::Q8_0 || s.type == GgmlType::Q5_K;
    const bool expert = s.chunk > 0;
    for (Isa isa : {Isa::kAmx, Isa::kAvx512Vnni, Isa::kAvxVnni, Isa::kAvx2}) {
      if (!isa_supported(isa)) continue;
      for (int64_t L : s.tokens > 0 ? std::vector<int64_t>{2, s.tokens}
                       : head       ? std::vector<int64_t>{32}
                       : expert     ? std::vector<int64_t>{18}
                       : moe        ? std::vector<int64_t>{32, 141}
                                    : std::vector<int64_t>{64, 141, 256, 512}) {
        for (int threads : {1, 2}) {
          const std::string name = std::string(s.name) + "/" + dllm::isa_name(isa) +
                                   "/L:" + std::to_string(L) + "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), BM_gemm, s, isa, L, threads)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime()
              ->MinTime(0.3);
        }
      }
    }
  }

  // The MoE block at a 141-token canvas, rows spread over the experts (BM_moe_block).
  for (const GgmlType down : {GgmlType::Q4_K, GgmlType::Q6_K}) {
    for (Isa isa : {Isa::kAvx512Vnni, Isa::kAvxVnni, Isa::kAvx2}) {
      if (!isa_supported(isa)) continue;
      for (int threads : {1, 2}) {
        const std::string name = std::string("moe_block_llada_moe_down_") + dllm::gguf::type_name(down) +
                                 "/" + dllm::isa_name(isa) + "/L:141/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_moe_block, down, isa, int64_t{141}, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.3);
      }
    }
  }

  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string_view(argv[i]).rfind("--note=", 0) != 0) args.emplace_back(argv[i]);
  }
  if (!has_out && !listing) {
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    // Seconds in the name: a filtered rerun must never replace an earlier run's file.
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    const auto dir = root / "bench" / "results";
    std::filesystem::create_directories(dir);
    const auto out = dir / ("qgemm-" + std::string(host) + "-" + date + ".json");
    args.push_back("--benchmark_out=" + out.string());
    args.push_back("--benchmark_out_format=json");
    std::printf("writing %s\n", out.c_str());
  }
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  int cargc = int(cargs.size());
  benchmark::Initialize(&cargc, cargs.data());
  if (benchmark::ReportUnrecognizedArguments(cargc, cargs.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
