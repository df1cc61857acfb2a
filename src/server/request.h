// The body of POST /v1/chat/completions and POST /v1/completions, parsed and checked: JSON text in, a
// GenerationRequest or the ApiError to answer with out. Pure (no model, no I/O, no global state), so
// fuzz/request_fuzz.cpp drives it directly. What needs the model (the prompt's length in tokens, the
// schedule checks of `dllm run`) is checked afterwards, by prepare_request (prepare.h).
//
// Fields (OpenAI's names; the diffusion ones under `dllm run`'s flag names, docs/serving.md):
//   model, messages (chat) | prompt (completions), max_tokens (alias max_completion_tokens), temperature,
//   top_p, top_k, seed, stop, stream, stream_options.include_usage, n (1 only), steps, block_length,
//   threshold, cache, alg, alg_temp, remasking, cfg_scale, edit_threshold, max_post_edit_steps,
//   eb_t_min, eb_t_max, eb_entropy_bound, eb_stability, eb_confidence (DiffusionGemma; /props's names),
//   no_special, dllm.canvas.
// Refused with a 400 naming the field (not supported): logprobs, top_logprobs, tools, functions,
// response_format other than {"type": "text"}.
// Unknown fields are ignored (OpenAI's clients send fields such as `user` or `logit_bias`); a known
// field of the wrong type or out of range is a 400 naming it. `null` counts as absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/api_error.h"
#include "tokenizer/chat.h"

namespace dllm::server {

enum class Endpoint {
  kChat,        ///< POST /v1/chat/completions: messages through the model's chat template
  kCompletion,  ///< POST /v1/completions: the prompt as raw text, no template
};

/// A checked request. Optional fields left empty take the server's defaults (its run flags).
struct GenerationRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                             ///< as sent ("" when absent)
  std::vector<tokenizer::ChatMessage> messages;  ///< kChat: at least one turn
  std::string prompt;                            ///< kCompletion
  std::optional<int64_t> max_tokens;             ///< >= 1: the masks after the prompt (the canvas)
  std::optional<double> temperature;             ///< >= 0
  std::optional<double> top_p;                   ///< (0, 1]; a request's 0 arrives as the smallest double
  std::optional<int64_t> top_k;                  ///< >= 0
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  ///< up to 4 non-empty strings
  bool stream = false;
  bool include_usage = false;                  ///< stream_options.include_usage: a last chunk with usage
  std::optional<int64_t> steps;                ///< >= 1
  std::optional<int64_t> block_length;         ///< >= 1
  std::optional<double> threshold;             ///< (0, 1]
  std::optional<std::string> cache;            ///< none | prefix | dual | exact
  std::optional<double> edit_threshold;        ///< [0, 1]: LLaDA2.1 token editing (llada2)
  std::optional<int64_t> max_post_edit_steps;  ///< >= 0
  std::optional<std::string> alg;              ///< origin | maskgit_plus | topk_margin | entropy
  std::optional<double> alg_temp;              ///< >= 0
  std::optional<std::string> remasking;        ///< low_confidence | random
  std::optional<double> cfg_scale;             ///< >= 0
  std::optional<double> eb_t_min, eb_t_max;    ///< > 0: DiffusionGemma's last / first step temperature
  std::optional<double> eb_entropy_bound;      ///< >= 0: DiffusionGemma's entropy budget per step
  std::optional<int64_t> eb_stability;         ///< >= 0: DiffusionGemma's unchanged steps to stop
  std::optional<double> eb_confidence;         ///< >= 0: DiffusionGemma's mean entropy to stop
  bool canvas_events = false;                  ///< dllm.canvas: a canvas event after every step (streaming)
  std::optional<bool> no_special;  ///< true: control-token text in the prompt stays text (--no-special)
};

/// Parses and checks `body` for `endpoint`. `model_id` is the served model's name: a request naming
/// another model gets 404 model_not_found. Never throws (a bad body is an ApiError, 400 or 404).
std::variant<GenerationRequest, ApiError> parse_generation_request(Endpoint endpoint, std::string_view body,
                                                                   const std::string& model_id);

}  // namespace dllm::server
