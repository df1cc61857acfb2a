// The one option resolver of `run` and `serve`: the request settings of one generation (the flags of
// `dllm run`, the fields of a `dllm serve` request) turned into diffusion::SamplerParams with the
// architecture's defaults for what was not given (its default loop, model/arch.h), and the canvas-fit
// check both (and the engine) apply (README "Defaults": LLaDA follows generate.py's chat settings, block 32,
// steps = max tokens, low_confidence, temperature 0; Dream its model card's alg entropy, temperature 0, eps
// 1e-3). One function, so `run` and `serve` give the same text for the same settings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/isa.h"
#include "diffusion/sampler.h"

namespace dllm::model {
struct ModelConfig;
}
namespace dllm::tokenizer {
class Tokenizer;
}

namespace dllm::engine {

/// What a caller asks for; nullopt = not given (the architecture's default applies, and a setting
/// of the other architecture draws no warning).
struct SamplerOptions {
  int64_t max_tokens = 64;
  std::optional<int64_t> steps;  ///< default: max_tokens
  std::optional<int64_t>
      block_length;  ///< LLaDA default 32 (the whole answer when 32 does not divide it); Dream 0
  double temperature = 0.0;
  uint64_t seed = 0;
  std::optional<std::string> remasking;  ///< LLaDA: low_confidence (default) | random
  std::optional<std::string> alg;        ///< Dream: origin | maskgit_plus | topk_margin | entropy (default)
  std::optional<double> alg_temp;        ///< Dream, default 0
  std::optional<double> top_p;           ///< Dream, default 1 (off)
  std::optional<int64_t> top_k;          ///< Dream, default 0 (off)
  std::optional<double> threshold;
  std::optional<double> edit_threshold;        ///< LLaDA2.1 token editing (block diffusion); nullopt: off
  std::optional<int64_t> max_post_edit_steps;  ///< with editing, default 16
  double cfg_scale = 0.0;
  // DiffusionGemma's entropy-bound sampler (diffusion::EntropyBoundParams); default: the file's
  // diffusion.eb_* value.
  std::optional<double> eb_t_min, eb_t_max, eb_entropy_bound, eb_confidence;
  std::optional<int64_t> eb_stability;
  std::string
      cache;  ///< none | prefix | dual | exact; "": the model's (exact for block diffusion, else none)
  bool early_stop = true;
  int n_threads = 0;     ///< threads of the sampler's per-row statistics (SamplerParams::n_threads)
  Isa isa = best_isa();  ///< their kernel path (SamplerParams::isa)
};

/// How warnings name a setting: `run`'s flags ("--alg-temp") or a request's JSON fields ("alg_temp").
enum class SettingNames { kFlags, kFields };

/// The canvas does not fit: the prompt alone (prompt_alone(): lowering max_tokens cannot help) or
/// prompt + max_tokens. A UsageError (exit 2); the server answers 400 context_length_exceeded.
class CanvasTooLong : public UsageError {
 public:
  CanvasTooLong(const std::string& message, bool prompt_alone)
      : UsageError(message), prompt_alone_(prompt_alone) {}
  bool prompt_alone() const { return prompt_alone_; }

 private:
  bool prompt_alone_;
};

/// The canvas-fit check of run (against the model's context), serve (against its context) and the
/// engine (against its longest canvas): throws CanvasTooLong naming the one thing to change, with
/// exactly "the prompt is <n> tokens and <limit_name> is <limit> tokens, which leaves no room for an
/// answer: shorten the prompt" or "the canvas is <n + m> tokens (prompt <n> + <max_tokens_name> <m>),
/// longer than <limit_name> of <limit> tokens: use <max_tokens_name> <limit - n> or less, or shorten
/// the prompt". granule > 1: the answer takes whole canvases of that many tokens (DiffusionGemma), so
/// m is max_tokens rounded up to them (the message says so), the suggestion the most whole canvases
/// that fit, and a prompt that leaves room for no whole canvas is the first case.
void check_canvas_fits(int64_t n_prompt, int64_t max_tokens, int64_t limit, const std::string& limit_name,
                       const std::string& max_tokens_name, int64_t granule = 1);

/// SamplerParams for `cfg` (the schedule, shift_logits) and `tok` (mask id, end ids, which of the
/// n_vocab logit rows may be sampled). Settings meant for the other architecture are ignored with a
/// warning appended to `warnings` ("--alg applies to Dream models; ignored for llada"). Throws
/// dllm::UsageError for an unknown cache / remasking / alg name, dllm::Error when the tokenizer has
/// no mask token. Does not validate the schedule: diffusion::check_params does.
diffusion::SamplerParams sampler_params(const SamplerOptions& o, const model::ModelConfig& cfg,
                                        const tokenizer::Tokenizer& tok, int64_t n_vocab,
                                        std::vector<std::string>& warnings,
                                        SettingNames names = SettingNames::kFlags);

}  // namespace dllm::engine
