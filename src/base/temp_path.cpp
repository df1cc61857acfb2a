// TempPath and the signal handlers that remove live ones (see temp_path.h).
#include "base/temp_path.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.h"

namespace dllm {

namespace {

// One entry of the handlers' table. Its path buffer is written only by the thread that claimed the
// slot (kFilling) and read only by the handler that moved it from kLive to kRemoving, so the two never
// touch the buffer at once, whichever thread the signal lands on.
enum SlotState : int {
  kFree = 0,
  kFilling = 1,   // claimed by a TempPath, its path being copied in
  kLive = 2,      // the handler may remove it
  kRemoving = 3,  // a handler took it; the process is about to die of the signal
};

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};

static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

Slot g_slots[kMaxTempPaths];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void remove_live_paths_and_die(int sig) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots) {
    int expected = kLive;
    if (slot.state.compare_exchange_strong(expected, kRemoving, std::memory_order_acquire))
      ::unlink(slot.path);
  }
  // SA_RESETHAND restored the default action on entry; the signal stays blocked until the handler
  // returns, so it is delivered then, with that default action.
  ::raise(sig);
  errno = saved_errno;
}

}  // namespace

void remove_temp_files_on_signals() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_handler = remove_live_paths_and_die;
  action.sa_flags = SA_RESETHAND;  // a second signal during the handler gets the default action
  sigemptyset(&action.sa_mask);
  for (int sig : kSignals) sigaddset(&action.sa_mask, sig);  // one handler at a time
  for (int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
}

std::string unique_temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

TempPath::TempPath(std::string path) : path_(std::move(path)) {
  if (path_.size() >= PATH_MAX) {
    throw Error("the temporary file name " + path_ + " is longer than PATH_MAX (" + std::to_string(PATH_MAX) +
                " bytes): choose a shorter path");
  }
  for (size_t i = 0; i < kMaxTempPaths; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) continue;
    std::memcpy(g_slots[i].path, path_.c_str(), path_.size() + 1);
    g_slots[i].state.store(kLive, std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
  throw Error("more than " + std::to_string(kMaxTempPaths) + " temporary files are open at once (" + path_ +
              ")");
}

void TempPath::release() {
  if (slot_ < 0) return;
  Slot& slot = g_slots[slot_];
  slot_ = -1;
  int expected = kLive;
  // Fails only in kRemoving: a handler on another thread owns the slot and the process is going down.
  slot.state.compare_exchange_strong(expected, kFree, std::memory_order_acq_rel);
}

TempPath::~TempPath() {
  if (slot_ < 0) return;
  ::unlink(path_.c_str());  // before the slot is given back: no moment when the file is unknown
  release();
}

}  // namespace dllm
