// key_range (mask.h): a rule's group of a position, and the sliding window before it.
#include "forward/mask.h"

#include <algorithm>

namespace dllm::forward {

std::string describe(const MaskRule& rule) {
  switch (rule.kind) {
    case MaskRule::Kind::kFull:
      return "full";
    case MaskRule::Kind::kBlockCausal:
      return rule.block == 1 ? "causal" : "block-causal " + std::to_string(rule.block);
    case MaskRule::Kind::kCausalPrompt:
      return "causal prompt " + std::to_string(rule.prompt);
  }
  return "?";
}

bool causal_row(const MaskRule& rule, int64_t pos) {
  switch (rule.kind) {
    case MaskRule::Kind::kFull:
      return false;
    case MaskRule::Kind::kBlockCausal:
      return rule.block == 1;
    case MaskRule::Kind::kCausalPrompt:
      return pos < rule.prompt;
  }
  return false;
}

KeyRange key_range(const MaskRule& rule, int64_t pos, int64_t n_keys, int64_t window) {
  // The row's group [group_begin, group_end): positions that see each other.
  int64_t group_begin = 0, group_end = n_keys;
  switch (rule.kind) {
    case MaskRule::Kind::kFull:
      break;
    case MaskRule::Kind::kBlockCausal:
      group_begin = pos / rule.block * rule.block;
      group_end = group_begin + rule.block;
      break;
    case MaskRule::Kind::kCausalPrompt:
      if (pos < rule.prompt) {
        group_begin = pos;
        group_end = pos + 1;
      } else {
        group_begin = rule.prompt;
      }
      break;
  }
  const int64_t begin = window > 0 ? std::max<int64_t>(0, group_begin - window + 1) : 0;
  const int64_t end = std::min(group_end, n_keys);
  return {static_cast<int32_t>(begin), static_cast<int32_t>(end)};
}

}  // namespace dllm::forward
