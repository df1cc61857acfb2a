// Memory read bandwidth, the floor of a weight-streaming step: `threads` OpenMP threads each read their
// own contiguous slice of one buffer much larger than the last-level cache with 64-byte zmm loads (ymm
// where the CPU has no AVX-512), xor-folded into 8 independent accumulators so that the loads, not the
// arithmetic, set the pace. The figure is bytes / wall time of the whole parallel read: what a GEMM that
// reads each weight once per step could reach at best. On a shared machine wall time also counts the
// slices other processes took, so each thread's CPU time is kept too: the sum over threads of slice
// bytes / that thread's CPU time is the rate while reading (equal to the wall figure on an idle machine;
// higher when the threads did not run together, because one reader alone gets more of the memory
// system). Benchmarks put both beside their figures (bench/qgemm_bench.cpp, in its results' context).
#pragma once

#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/isa.h"

namespace dllm::bench {

/// xor of the n bytes at p as 64-bit lanes, read with zmm loads. p 64-byte aligned, n a multiple of 512.
__attribute__((target("avx512f"))) inline uint64_t xor_read_zmm(const uint8_t* p, size_t n) {
  __m512i a[8];
  for (__m512i& x : a) x = _mm512_setzero_si512();
  for (size_t i = 0; i < n; i += 512)
    for (int k = 0; k < 8; ++k)
      a[k] = _mm512_xor_si512(a[k], _mm512_load_si512(reinterpret_cast<const __m512i*>(p + i + 64 * k)));
  for (int k = 1; k < 8; ++k) a[0] = _mm512_xor_si512(a[0], a[k]);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(reinterpret_cast<__m512i*>(lanes), a[0]);
  uint64_t r = 0;
  for (const uint64_t v : lanes) r ^= v;
  return r;
}

/// The same with ymm loads (CPUs without AVX-512). p 32-byte aligned, n a multiple of 512.
__attribute__((target("avx2"))) inline uint64_t xor_read_ymm(const uint8_t* p, size_t n) {
  __m256i a[8];
  for (__m256i& x : a) x = _mm256_setzero_si256();
  for (size_t i = 0; i < n; i += 256)
    for (int k = 0; k < 8; ++k)
      a[k] = _mm256_xor_si256(a[k], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32 * k)));
  for (int k = 1; k < 8; ++k) a[0] = _mm256_xor_si256(a[0], a[k]);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), a[0]);
  return lanes[0] ^ lanes[1] ^ lanes[2] ^ lanes[3];
}

struct ReadBandwidth {
  double median_gbs = 0, best_gbs = 0;  ///< 1e9 bytes per second of wall time
  double median_gbs_cpu = 0;            ///< sum over threads of 1e9 bytes per second of its CPU time
  int threads = 0;
  size_t bytes = 0;   ///< buffer size read per repetition
  std::string loads;  ///< "zmm" or "ymm"
};

/// Median and best over `reps` full reads of a `bytes` buffer (rounded down to a multiple of
/// 512 x threads) by `threads` threads, after one untimed read. The buffer is filled first so every page
/// is backed by memory, and freed on return. Needs AVX2 (AVX-512F for zmm loads).
inline ReadBandwidth measure_read_bandwidth(int threads, size_t bytes, int reps) {
  const bool zmm = cpu_features().avx512f;
  const size_t unit = 512 * size_t(threads);
  bytes -= bytes % unit;
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  if (!buf) return {};
    // Each slice written by the thread that reads it (first touch places its pages near that thread).
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    std::memset(buf + t * (bytes / threads), t + 1, bytes / threads);
  }
  volatile uint64_t sink = 0;  // keeps the reads' result alive
  auto thread_cpu_s = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  double cpu_rate = 0;  // of the last read
  auto one_read = [&] {
    uint64_t fold = 0;
    double rate = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(^ : fold) reduction(+ : rate)
    {
      const int t = omp_get_thread_num();
      const size_t n = bytes / threads;
      const double c0 = thread_cpu_s();
      fold ^= zmm ? xor_read_zmm(buf + t * n, n) : xor_read_ymm(buf + t * n, n);
      rate += double(n) / (thread_cpu_s() - c0) / 1e9;
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink = sink ^ fold;
    cpu_rate = rate;
    return s;
  };
  one_read();
  std::vector<double> gbs, gbs_cpu;
  for (int r = 0; r < reps; ++r) {
    gbs.push_back(double(bytes) / one_read() / 1e9);
    gbs_cpu.push_back(cpu_rate);
  }
  std::free(buf);
  std::sort(gbs.begin(), gbs.end());
  std::sort(gbs_cpu.begin(), gbs_cpu.end());
  ReadBandwidth r;
  r.median_gbs = gbs[gbs.size() / 2];
  r.best_gbs = gbs.back();
  r.median_gbs_cpu = gbs_cpu[gbs_cpu.size() / 2];
  r.threads = threads;
  r.bytes = bytes;
  r.loads = zmm ? "zmm" : "ymm";
  return r;
}

}  // namespace dllm::bench
