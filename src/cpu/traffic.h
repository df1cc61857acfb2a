// Weight traffic of the matrix products: the bytes of weights read and the multiply-adds, summed over
// every Matrix::multiply call of the process while counting is on. The CPU forward turns it on with
// its profile ($DLLM_PROFILE) and reports it per forward pass, so a benchmark can set a step beside
// its floors (bytes / read bandwidth, multiply-adds / int8 peak) from the routing that actually ran
// (bench/llada2_bench.py). Off, a multiply pays one relaxed load.
#pragma once

#include <cstdint>

namespace dllm::cpu {

/// Totals since the process started counting.
struct Traffic {
  uint64_t weight_bytes = 0;  ///< bytes of weights read: per call, the called rows' share of weight_bytes()
  uint64_t macs = 0;          ///< multiply-adds: rows x n_in x tokens per call
};

/// Turns counting on or off for the whole process (thread-safe).
void set_traffic_counting(bool on);
/// True while counting is on.
bool traffic_counting();
/// Adds one call's figures (thread-safe).
void count_traffic(uint64_t weight_bytes, uint64_t macs);
/// The totals so far.
Traffic traffic_totals();

}  // namespace dllm::cpu
