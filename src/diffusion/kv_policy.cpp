// The K/V policies of kv_policy.h.
#include "diffusion/kv_policy.h"

#include <algorithm>

namespace dllm::diffusion {

forward::Segment KvNone::segment(std::span<const int32_t> canvas, const ActiveBlock& block) {
  forward::Segment s;
  s.tokens = canvas;
  // Under a block-causal mask no row before the block's end reads a later one.
  if (mask_.kind == forward::MaskRule::Kind::kBlockCausal && block.end > 0 && block.end % mask_.block == 0 &&
      block.end <= static_cast<int64_t>(canvas.size()))
    s.tokens = canvas.first(static_cast<size_t>(block.end));
  s.mask = mask_;
  return s;
}

forward::Segment KvFastDllm::segment(std::span<const int32_t> canvas, const ActiveBlock& block) {
  forward::Segment s;
  s.tokens = canvas;
  s.kv = &kv_;
  refreshed_ = block.index != cached_block_;
  if (refreshed_) {
    kv_.clear();  // every row recomputed
    return s;
  }
  const int64_t begin = std::max<int64_t>(0, block.begin - (shift_ ? 1 : 0));
  const int64_t end = dual_ ? block.end : static_cast<int64_t>(canvas.size());
  s.tokens = canvas.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  s.first = begin;
  return s;
}

forward::Segment KvExactBlocks::segment(std::span<const int32_t> canvas, const ActiveBlock& block) {
  forward::Segment s;
  s.tokens = canvas.subspan(static_cast<size_t>(kept_), static_cast<size_t>(block.end - kept_));
  s.first = kept_;
  s.kv = &kv_;
  s.mask = mask_;
  // Every row of the canvas ends up in the state: room for all of them on the first pass.
  kv_.expect_rows(static_cast<int64_t>(canvas.size()));
  return s;
}

}  // namespace dllm::diffusion
