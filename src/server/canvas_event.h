// The `canvas` event of a stream with "dllm": {"canvas": true} (docs/serving.md "Streaming"): after
// every step, the answer region of the canvas as one cell per position, what this step committed,
// what else changed (a re-noising model's remasked or replaced positions), the step's block and time.
// A pure function of the step, so tests/server/canvas_event_test.cpp checks it on canvases written
// by hand.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/tokenizer.h"

namespace dllm::server {

/// One step of one request, in answer positions (0 = the first position after the prompt).
struct CanvasStep {
  std::string id;                      ///< the completion's id
  int64_t step = 0;                    ///< 0-based forward passes of the request so far
  double step_ms = 0;                  ///< the step's forward pass (its batched pass) and sampling
  std::span<const int32_t> answer;     ///< canvas[prompt_len ..) after the step
  std::span<const int32_t> before;     ///< the same positions before the step; empty: all masks
  std::span<const int32_t> committed;  ///< answer positions the sampler committed this step, increasing
  /// Answer positions [block_begin, block_end) of the block the step worked on; a block as wide as
  /// the answer (no blocks) is left out of the event.
  int64_t block_begin = 0, block_end = 0;
  int32_t mask_id = -1;
};

/// The event's JSON: object "dllm.canvas", id, step, step_ms, tokens_committed (this step),
/// committed, committed_total (answer positions not masked), mask (U+2591), text (the answer region,
/// committed runs decoded and each mask as `mask`), cells (per position: null when masked, else the
/// token's text, control tokens spelled out), ends (positions holding an end-of-generation token:
/// the answer stops at the first), and when present block ([begin, end)) and changed (positions
/// that held a token before the step and now hold a mask or another token). Never throws for ids
/// the tokenizer knows; invalid UTF-8 in a piece becomes U+FFFD.
std::string canvas_event_body(const CanvasStep& s, const tokenizer::Tokenizer& tok);

}  // namespace dllm::server
