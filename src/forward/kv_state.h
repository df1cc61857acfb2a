// The keys and values of one sequence, kept between its forward passes: owned by whoever owns the
// sequence (the sampler's diffusion::Sequence, through its K/V policy), written and read by the
// forward pass. A pass writes the K/V of the rows a segment computes at their positions and reads
// every row held as the segment's keys, so what a policy keeps is decided by which rows it sends:
//   exact reuse (block diffusion)   rows written once with their final tokens, read by every later step
//   Fast-dLLM's refresh             every row rewritten at a block's first step, a window after that:
//                                   the rows outside the window are as the refresh left them (stale)
// The memory is the device's (Storage), made by the device on the first pass that writes rows and
// grown with the rows held, never sized for a context the sequence does not use; when the owner
// knows the rows the sequence will hold (expect_rows: a block-diffusion canvas), the first growth
// makes room for all of them, so a later pass does not regrow and copy the state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace dllm::forward {

class KvState {
 public:
  /// A device's memory for the rows: K and V of every layer for positions 0 .. capacity - 1.
  class Storage {
   public:
    virtual ~Storage() = default;
    /// Bytes held (K and V of every layer, at the capacity).
    virtual size_t bytes() const = 0;
    /// The forward pass that made it: a pass refuses a state another pass (or device) filled.
    virtual const void* owner() const = 0;
  };

  KvState() = default;
  KvState(KvState&&) noexcept = default;
  KvState& operator=(KvState&&) noexcept = default;

  /// Positions 0 .. rows() - 1 hold K/V written by earlier passes.
  int64_t rows() const { return rows_; }
  /// Bytes the device holds for this state (0 before the first pass).
  size_t bytes() const { return storage_ ? storage_->bytes() : 0; }
  /// Forgets every row; the memory stays for the rows written next.
  void clear() { rows_ = 0; }
  /// The most rows this sequence will hold (its canvas), 0 when unknown: a device sizes the storage
  /// for them when it first grows it (at least the rows the pass writes). A hint, not a limit.
  void expect_rows(int64_t rows) { expected_rows_ = rows; }
  int64_t expected_rows() const { return expected_rows_; }

  // For the forward pass.
  Storage* storage() const { return storage_.get(); }
  void set_storage(std::unique_ptr<Storage> s) { storage_ = std::move(s); }
  void set_rows(int64_t rows) { rows_ = rows; }

 private:
  int64_t rows_ = 0;
  int64_t expected_rows_ = 0;
  std::unique_ptr<Storage> storage_;
};

}  // namespace dllm::forward
