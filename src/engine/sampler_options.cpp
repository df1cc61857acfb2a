// sampler_params (sampler_options.h): per-architecture defaults and the warnings for settings of the
// other architecture.
#include "engine/sampler_options.h"

#include <iterator>
#include <utility>

#include "base/error.h"
#include "model/arch.h"
#include "tokenizer/tokenizer.h"

namespace dllm::engine {

namespace {

/// "--alg-temp" or "alg_temp" for the field name "alg_temp".
std::string setting(const std::string& field, SettingNames names) {
  if (names == SettingNames::kFields) return field;
  std::string flag = "--" + field;
  for (char& ch : flag)
    if (ch == '_') ch = '-';
  return flag;
}

}  // namespace

void check_canvas_fits(int64_t n_prompt, int64_t max_tokens, int64_t limit, const std::string& limit_name,
                       const std::string& max_tokens_name, int64_t granule) {
  const std::string cap = std::to_string(limit);
  granule = std::max<int64_t>(granule, 1);
  if (n_prompt + granule > limit) {
    throw CanvasTooLong("the prompt is " + std::to_string(n_prompt) + " tokens and " + limit_name + " is " +
                            cap + " tokens, which leaves no room for an answer: shorten the prompt",
                        true);
  }
  const int64_t answer = (max_tokens + granule - 1) / granule * granule;
  if (n_prompt + answer > limit) {
    const std::string rounded = answer != max_tokens
                                    ? ", rounded up to whole canvases of " + std::to_string(granule) +
                                          " tokens: " + std::to_string(answer)
                                    : "";
    throw CanvasTooLong(
        "the canvas is " + std::to_string(n_prompt + answer) + " tokens (prompt " + std::to_string(n_prompt) +
            " + " + max_tokens_name + " " + std::to_string(max_tokens) + rounded + "), longer than " +
            limit_name + " of " + cap + " tokens: use " + max_tokens_name + " " +
            std::to_string((limit - n_prompt) / granule * granule) + " or less, or shorten the prompt",
        false);
  }
}

diffusion::SamplerParams sampler_params(const SamplerOptions& o, const model::ModelConfig& cfg,
                                        const tokenizer::Tokenizer& tok, int64_t n_vocab,
                                        std::vector<std::string>& warnings, SettingNames names) {
  if (cfg.arch->causal_lm) {
    throw Error(
        cfg.arch_name +
        " is an autoregressive model: dllm computes its logits (dllm logits) as a check of a diffusion "
        "model's backbone, and does not generate text with it");
  }
  diffusion::SamplerParams p;
  const bool block_diffusion = cfg.arch->loop == model::DefaultLoop::kBlockDiffusion;
  if (o.edit_threshold && !block_diffusion)
    throw UsageError(setting("edit_threshold", names) + " applies to block-diffusion models (llada2); " +
                     cfg.arch_name + " has no token editing");
  if (o.max_post_edit_steps && !o.edit_threshold)
    warnings.push_back(setting("max_post_edit_steps", names) + " applies with " +
                       setting("edit_threshold", names) + " (LLaDA2.1 token editing); ignored");
  if (cfg.canvas_length > 0) {
    // DiffusionGemma: the entropy-bound sampler with the file's diffusion.eb_* values; steps is its
    // eb_max_steps, max_tokens whole canvases (blocks), the seed std::mt19937's. The masked loops'
    // settings do not apply.
    const int64_t C = cfg.canvas_length;
    diffusion::EntropyBoundParams e;
    e.canvas_length = C;
    e.max_tokens = o.max_tokens;  // the answer is cut there
    e.max_steps = o.steps.value_or(cfg.eb.max_steps);
    e.t_min = o.eb_t_min ? static_cast<float>(*o.eb_t_min) : cfg.eb.t_min;
    e.t_max = o.eb_t_max ? static_cast<float>(*o.eb_t_max) : cfg.eb.t_max;
    e.entropy_bound = o.eb_entropy_bound ? static_cast<float>(*o.eb_entropy_bound) : cfg.eb.entropy_bound;
    e.stability = o.eb_stability.value_or(cfg.eb.stability);
    e.confidence = o.eb_confidence ? static_cast<float>(*o.eb_confidence) : cfg.eb.confidence;
    e.seed = static_cast<uint32_t>(o.seed);
    p.entropy_bound = e;
    p.max_tokens = (o.max_tokens + C - 1) / C * C;
    p.steps = e.max_steps;
    p.seed = o.seed;
    p.mask_id = tok.mask_id();
    p.end_ids = tok.eog_ids();
    p.n_vocab_draw = tok.n_tokens();
    p.n_threads = o.n_threads;
    p.isa = o.isa;
    if (names == SettingNames::kFlags) p.names.steps = setting("steps", names);
    const bool given[] = {
        o.block_length.has_value(), o.remasking.has_value(), o.alg.has_value(),       o.alg_temp.has_value(),
        o.top_p.has_value(),        o.top_k.has_value(),     o.threshold.has_value(), o.cfg_scale > 0,
        o.temperature > 0,          !o.cache.empty()};
    const char* fields[] = {"block_length", "remasking", "alg",       "alg_temp",    "top_p",
                            "top_k",        "threshold", "cfg_scale", "temperature", "cache"};
    for (size_t i = 0; i < std::size(fields); ++i)
      if (given[i])
        warnings.push_back(setting(fields[i], names) + " does not apply to the entropy-bound sampler of " +
                           cfg.arch_name + "; ignored");
    return p;
  }
  const bool eb_given[] = {o.eb_t_min.has_value(), o.eb_t_max.has_value(), o.eb_entropy_bound.has_value(),
                           o.eb_stability.has_value(), o.eb_confidence.has_value()};
  const char* eb_fields[] = {"eb_t_min", "eb_t_max", "eb_entropy_bound", "eb_stability", "eb_confidence"};
  for (size_t i = 0; i < std::size(eb_fields); ++i)
    if (eb_given[i])
      warnings.push_back(setting(eb_fields[i], names) +
                         " applies to the entropy-bound sampler (diffusion-gemma); ignored for " +
                         cfg.arch_name);
  // check_params' errors and warnings name the settings as the caller's users typed them (the
  // sampler has no eps setting to name: Dream's eps is fixed).
  if (names == SettingNames::kFlags) {
    p.names.max_tokens = setting("max_tokens", names);
    p.names.steps = setting("steps", names);
    p.names.block_length = setting("block_length", names);
    p.names.temperature = setting("temperature", names);
    p.names.threshold = setting("threshold", names);
    p.names.cfg_scale = setting("cfg_scale", names);
    p.names.cache = setting("cache", names);
    p.names.top_p = setting("top_p", names);
    p.names.top_k = setting("top_k", names);
    p.names.alg_temp = setting("alg_temp", names);
  }
  p.max_tokens = o.max_tokens;
  p.steps = o.steps.value_or(o.max_tokens);
  p.temperature = o.temperature;
  p.seed = o.seed;
  p.threshold = o.threshold;
  p.cfg_scale = o.cfg_scale;
  // "": the model's own (block diffusion: its exact cache; the others none).
  p.cache = o.cache.empty() ? (block_diffusion ? diffusion::CacheMode::kExact : diffusion::CacheMode::kNone)
                            : diffusion::parse_cache_mode(o.cache);
  p.shift_logits = cfg.shift_logits;
  p.early_stop = o.early_stop;
  p.n_threads = o.n_threads;
  p.isa = o.isa;
  p.mask_id = tok.mask_id();
  if (p.mask_id < 0) {
    throw Error("model has no mask token (tokenizer.ggml.mask_token_id missing): not a diffusion model GGUF");
  }
  p.end_ids = tok.eog_ids();
  p.sampleable = tok.sampleable_mask(static_cast<int32_t>(n_vocab));

  if (block_diffusion) {
    // LLaDA2's HF generate defaults: block 32 (the model's), 32 steps per block, threshold 0.95,
    // temperature 0 (greedy here: HF samples at T = 1 there, ZHZisZZ/dllm #104), no top-k / top-p.
    p.schedule = diffusion::Schedule::kBlockDiffusion;
    p.block_length = o.block_length.value_or(cfg.block_length);
    p.steps = o.steps.value_or(32);
    // LLaDA2.1's editing (SGLang joint_threshold.py): its threshold defaults to 0.5.
    p.edit_threshold = o.edit_threshold;
    if (o.max_post_edit_steps) p.max_post_edit_steps = *o.max_post_edit_steps;
    p.threshold = o.threshold.value_or(o.edit_threshold ? 0.5 : 0.95);
    p.top_p = o.top_p.value_or(1.0);
    p.top_k = o.top_k.value_or(0);
    const bool given[] = {o.alg.has_value(), o.alg_temp.has_value(), o.remasking.has_value()};
    const char* fields[] = {"alg", "alg_temp", "remasking"};
    for (size_t i = 0; i < 3; ++i) {
      if (given[i])
        warnings.push_back(setting(fields[i], names) + " does not apply to block diffusion; ignored for " +
                           cfg.arch_name);
    }
  } else if (cfg.arch->loop == model::DefaultLoop::kLladaBlocks) {
    p.schedule = diffusion::Schedule::kBlocks;
    p.remasking = diffusion::parse_remasking(o.remasking.value_or("low_confidence"));
    // One block when max_tokens is not a multiple of the default 32 and no block length was given.
    const int64_t bl = o.block_length.value_or(32);
    p.block_length = o.block_length || o.max_tokens % bl == 0 ? bl : o.max_tokens;
    const bool given[] = {o.alg.has_value(), o.alg_temp.has_value(), o.top_p.has_value(),
                          o.top_k.has_value()};
    const char* fields[] = {"alg", "alg_temp", "top_p", "top_k"};
    for (size_t i = 0; i < 4; ++i) {
      if (given[i])
        warnings.push_back(setting(fields[i], names) + " applies to Dream models; ignored for llada");
    }
  } else {
    p.schedule = diffusion::Schedule::kTimesteps;
    p.alg = diffusion::parse_dream_alg(o.alg.value_or("entropy"));
    p.alg_temp = o.alg_temp.value_or(0.0);
    p.top_p = o.top_p.value_or(1.0);
    p.top_k = o.top_k.value_or(0);
    // Dream uses blocks only for threshold decoding; 0 = the whole canvas is one block.
    p.block_length = o.block_length.value_or(0);
    if (o.remasking)
      warnings.push_back(setting("remasking", names) + " applies to LLaDA models; ignored for dream");
    if (o.block_length && !o.threshold) {
      warnings.push_back(setting("block_length", names) + " applies to LLaDA models (or Dream with " +
                         setting("threshold", names) + "); ignored");
    }
    // Dream's threshold loop ranks by p(x0) (Fast-dLLM's confidence_threshold alg) and has no
    // timestep schedule.
    if (o.threshold) {
      for (const auto& [given, field] :
           {std::pair{o.alg.has_value(), "alg"}, {o.alg_temp.has_value(), "alg_temp"}}) {
        if (given) {
          warnings.push_back(setting(field, names) + " is not used with " + setting("threshold", names) +
                             ": threshold decoding ranks positions by p(x0) and commits every one above the "
                             "threshold");
        }
      }
    }
  }
  if (o.threshold && o.steps && !block_diffusion) {
    warnings.push_back(
        setting("steps", names) + " is not used with " + setting("threshold", names) +
        ": threshold decoding runs until every block is full, committing at least one token per "
        "step (up to " +
        setting("max_tokens", names) + " steps)");
  }
  return p;
}

}  // namespace dllm::engine
