// How many threads the CPU forward pass runs on by default.
#pragma once

namespace dllm::cpu {

/// Physical cores this process may run on: distinct (package, core) pairs among the CPUs of its
/// affinity mask, read from /sys/devices/system/cpu/cpuN/topology; falls back to
/// std::thread::hardware_concurrency() (logical CPUs) when that is unreadable. At least 1.
int physical_core_count();

}  // namespace dllm::cpu
