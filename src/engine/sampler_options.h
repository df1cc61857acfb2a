// The request settings of one generation (the flags of `dllm run`, the fields of a `dllm serve`
// request) turned into diffusion::SamplerParams with the architecture's defaults for what was not
// given (README "Defaults": LLaDA follows generate.py's chat settings, block 32, steps = max tokens,
// low_confidence, temperature 0; Dream its model card's alg entropy, temperature 0, eps 1e-3). One
// function, so `run` and `serve` give the same text for the same settings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  double cfg_scale = 0.0;
  std::string cache = "none";  ///< none | prefix | dual
  bool early_stop = true;
  int n_threads = 0;     ///< threads of the sampler's per-row statistics (SamplerParams::n_threads)
  Isa isa = best_isa();  ///< their kernel path (SamplerParams::isa)
};

/// How warnings name a setting: `run`'s flags ("--alg-temp") or a request's JSON fields ("alg_temp").
enum class SettingNames { kFlags, kFields };

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
