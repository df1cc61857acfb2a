// physical_core_count (threads.h).
#include "cpu/threads.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace dllm::cpu {

int physical_core_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    std::set<std::pair<std::string, std::string>> cores;
    bool readable = true;
    for (int cpu = 0; cpu < CPU_SETSIZE && readable; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      std::ifstream pkg(dir + "physical_package_id"), core(dir + "core_id");
      std::string p, c;
      if (!(pkg >> p) || !(core >> c)) readable = false;
      cores.emplace(p, c);
    }
    if (readable && !cores.empty()) return static_cast<int>(cores.size());
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace dllm::cpu
