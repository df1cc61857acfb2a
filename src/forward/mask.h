// Attention masks as named rules over absolute positions: which keys a query row of a sequence may
// see. The forward pass turns a rule into one key range per query row (key_range) and the attention
// kernels (cpu/kernels/row_kernels.h AttentionHead, cuda/kernels.h kern::attention) read only that
// range. Every rule here gives each row one contiguous range of keys, so a range is two numbers.
//
// Keys are the positions 0 .. n_keys - 1 of the row's own sequence (its K/V state, or the rows of the
// pass when nothing is kept). A rule puts each query position i in a group of positions that see
// each other; the row sees every key from 0 to the end of its group:
//   full            one group: every key (LLaDA, Dream, LLaDA-MoE, RND1)
//   block-causal B  groups are blocks of B positions counted from absolute position 0: i sees j iff
//                   j / B <= i / B (LLaDA2.x, HF modeling_llada2_moe.py / SGLang srt/dllm); B = 1 is
//                   causal. A prompt of P tokens ends inside a block when P % B != 0: its last P % B
//                   tokens share that block, and see the first generated ones, as the reference does.
//   causal prompt P positions below P are causal (a group each); the positions from P on are one group
//                   that sees the whole prompt (DiffusionGemma's prompt encoder and canvas).
// A sliding window of W keys (a layer's attention kind, model/layer_desc.h) keeps the W - 1 keys
// before the row's group and the group's keys up to the row's end: for a causal row i the keys
// i - W + 1 .. i (llama.cpp's SWA, |i - j| < W), for DiffusionGemma's canvas the last W - 1 prompt
// tokens and the canvas. Under the full rule the group is every key, so a window changes nothing.
#pragma once

#include <cstdint>
#include <string>

namespace dllm::forward {

/// Keys [begin, end) one query row may see (positions of its sequence); begin < end.
struct KeyRange {
  int32_t begin = 0;
  int32_t end = 0;
};

/// Which keys each query row of a sequence may see (see the top of this file).
struct MaskRule {
  enum class Kind : uint8_t { kFull, kBlockCausal, kCausalPrompt };
  Kind kind = Kind::kFull;
  int64_t block = 1;   ///< kBlockCausal: block length B >= 1
  int64_t prompt = 0;  ///< kCausalPrompt: prompt length P >= 0

  static MaskRule full() { return {}; }
  /// Blocks of `block_length` positions from absolute position 0.
  static MaskRule block_causal(int64_t block_length) { return {Kind::kBlockCausal, block_length, 0}; }
  /// Each position sees itself and the positions before it: block_causal(1).
  static MaskRule causal() { return block_causal(1); }
  /// Positions below prompt_len causal, the rest one bidirectional group that sees the whole prompt.
  static MaskRule causal_prompt(int64_t prompt_len) { return {Kind::kCausalPrompt, 1, prompt_len}; }

  bool operator==(const MaskRule&) const = default;
};

/// "full", "block-causal 32", "causal", "causal prompt 17": for messages.
std::string describe(const MaskRule& rule);

/// True when the row at `pos` sees no key after itself: every row of a causal rule (block 1) and the
/// prompt rows of a causal prompt. DiffusionGemma's encoder rows (enc_layer_output_scale), as opposed
/// to its canvas rows.
bool causal_row(const MaskRule& rule, int64_t pos);

/// The keys the query at position `pos` sees under `rule` among n_keys keys, on a layer with a
/// sliding window of `window` keys (0: none). Requires 0 <= pos < n_keys (a row sees at least
/// itself), block >= 1, prompt >= 0, window >= 0.
KeyRange key_range(const MaskRule& rule, int64_t pos, int64_t n_keys, int64_t window = 0);

}  // namespace dllm::forward
