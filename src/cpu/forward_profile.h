// Opt-in per-phase timing of the CPU forward pass ($DLLM_PROFILE=1; bench/profile_forward.py reads
// the table): wall time and process CPU time (all threads, spin-waiting included) per phase, summed
// over forward passes and printed per pass to stderr when the CpuForward is destroyed, with each
// pass's weight bytes and multiply-adds (traffic.h). With $DLLM_PROFILE_ROWS=N only the passes of N
// activation rows are timed (a block-diffusion run's 32-row steps, not its prompt pass or the first
// pass of each block). Off (the default), a phase costs one branch. Internal to src/cpu/forward.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/traffic.h"

namespace dllm::cpu {

enum class Phase {
  kEmbed,
  kSelfCondProbs,  ///< DiffusionGemma: softmax of the previous logits, the used ids
  kSelfCondGemm,   ///< DiffusionGemma: probs @ token_embd (cpu/panel_gemm.h)
  kNorm,
  kQuantize,
  kGemmQkv,
  kBiasRope,
  kKvCache,
  kAttention,
  kGemmO,
  kGemmGateUp,
  kSiluMul,
  kGemmDown,
  kMoeFfn,
  kLmHead,
  kCount
};

struct Profile {
  bool on = false;        ///< from $DLLM_PROFILE: set and not "0"
  int64_t only_rows = 0;  ///< from $DLLM_PROFILE_ROWS: time only passes of this many rows (0: all)
  bool timing = false;    ///< whether the current pass is timed
  int64_t forwards = 0;   ///< passes timed
  std::array<double, static_cast<size_t>(Phase::kCount)> wall_s{}, cpu_s{};

  /// One forward pass: its activation rows and the traffic counters (traffic.h) when it began.
  struct Pass {
    int64_t rows = 0;
    Traffic start;
  };
  std::vector<Pass> passes;

  /// Reads $DLLM_PROFILE and $DLLM_PROFILE_ROWS; when on, also turns traffic counting on.
  Profile();
  /// A forward pass of `rows` activation rows starts now: its traffic is recorded, and its phases are
  /// timed unless only_rows excludes it. Returns whether they are.
  bool begin_pass(int64_t rows);
  /// The table, one row per phase and a total, per forward pass, then each pass's rows, weight bytes
  /// and multiply-adds (nothing when off or unused).
  void print() const;

  /// Times one phase from construction to destruction.
  class Scope {
   public:
    Scope(Profile& p, Phase phase) : p_(p.on && p.timing ? &p : nullptr), phase_(phase) {
      if (p_ != nullptr) start();
    }
    ~Scope() {
      if (p_ != nullptr) stop();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    void start();
    void stop();
    Profile* p_;
    Phase phase_;
    double wall0_ = 0, cpu0_ = 0;
  };
};

}  // namespace dllm::cpu
