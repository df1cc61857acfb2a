// See props.h.
#include "server/props.h"

#include <charconv>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace dllm::server {

namespace {

/// The family of sampler settings that apply (props.h).
const char* schedule_name(const diffusion::SamplerParams& p) {
  if (p.entropy_bound) return "entropy_bound";
  switch (p.schedule) {
    case diffusion::Schedule::kBlocks:
      return "llada";
    case diffusion::Schedule::kBlockDiffusion:
      return "block_diffusion";
    case diffusion::Schedule::kTimesteps:
      break;
  }
  return "dream";
}

}  // namespace

std::string props_body(const ModelContext& m, const std::string& model_id) {
  using nlohmann::json;
  std::vector<std::string> warnings;  // about flags of the other architecture: `serve` printed them
  const diffusion::SamplerParams p = engine::sampler_params(
      m.defaults, *m.config, *m.tok, m.engine->n_vocab(), warnings, engine::SettingNames::kFields);
  const std::string schedule = schedule_name(p);
  // No --seed: each request without a seed gets a fresh one, so there is no default to show.
  const json seed = m.fresh_seed ? json(nullptr) : json(p.seed);
  // The file's f32 settings as the shortest decimal that reads back as that float (0.05, not
  // 0.05000000074505806).
  const auto f32 = [](float v) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::strtod(std::string(buf, r.ptr).c_str(), nullptr);
  };
  json d;
  if (p.entropy_bound) {
    // DiffusionGemma's sampler: a request sets max_tokens, steps and seed; the rest is the file's.
    const diffusion::EntropyBoundParams& e = *p.entropy_bound;
    d = {{"max_tokens", e.max_tokens},
         {"steps", e.max_steps},
         {"seed", seed},
         {"canvas_length", e.canvas_length},
         {"eb_t_min", f32(e.t_min)},
         {"eb_t_max", f32(e.t_max)},
         {"eb_entropy_bound", f32(e.entropy_bound)},
         {"eb_stability", e.stability},
         {"eb_confidence", f32(e.confidence)}};
  } else {
    d = {{"max_tokens", p.max_tokens},
         {"steps", p.steps},
         {"block_length", p.block_length},
         {"threshold", p.threshold ? json(*p.threshold) : json(nullptr)},
         {"cache", diffusion::cache_mode_name(p.cache)},
         {"temperature", p.temperature},
         {"top_p", p.top_p},
         {"top_k", p.top_k},
         {"seed", seed}};
    if (schedule == "llada") {
      d["remasking"] = diffusion::remasking_name(p.remasking);
      d["cfg_scale"] = p.cfg_scale;
    } else if (schedule == "dream") {
      d["alg"] = diffusion::dream_alg_name(p.alg);
      d["alg_temp"] = p.alg_temp;
      d["cfg_scale"] = p.cfg_scale;
    } else {
      d["edit_threshold"] = p.edit_threshold ? json(*p.edit_threshold) : json(nullptr);
    }
  }
  json j = {{"model", model_id},
            {"arch", m.config->arch_name},
            {"schedule", schedule},
            {"total_slots", m.engine->options().parallel},
            {"n_ctx", m.max_canvas},
            {"default_generation_settings", std::move(d)},
            {"steps_follow_max_tokens", !m.defaults.steps.has_value() && !p.entropy_bound &&
                                            p.schedule != diffusion::Schedule::kBlockDiffusion}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace dllm::server
