// See props.h.
#include "server/props.h"

#include <nlohmann/json.hpp>

namespace dllm::server {

std::string props_body(const ModelContext& m, const std::string& model_id) {
  using nlohmann::json;
  std::vector<std::string> warnings;  // about flags of the other architecture: `serve` printed them
  const diffusion::SamplerParams p = engine::sampler_params(
      m.defaults, *m.config, *m.tok, m.engine->n_vocab(), warnings, engine::SettingNames::kFields);
  const bool llada =
      p.schedule == diffusion::Schedule::kBlocks;  // LLaDA's settings (remasking), else Dream's
  json d = {{"max_tokens", p.max_tokens},
            {"steps", p.steps},
            {"block_length", p.block_length},
            {"threshold", p.threshold ? json(*p.threshold) : json(nullptr)},
            {"cache", diffusion::cache_mode_name(p.cache)},
            {"temperature", p.temperature},
            {"top_p", p.top_p},
            {"top_k", p.top_k},
            {"seed", p.seed},
            {"cfg_scale", p.cfg_scale}};
  if (llada) {
    d["remasking"] = diffusion::remasking_name(p.remasking);
  } else {
    d["alg"] = diffusion::dream_alg_name(p.alg);
    d["alg_temp"] = p.alg_temp;
  }
  json j = {{"model", model_id},
            {"arch", m.config->arch_name},
            {"schedule", llada ? "llada" : "dream"},
            {"total_slots", m.engine->options().parallel},
            {"n_ctx", m.max_canvas},
            {"default_generation_settings", std::move(d)},
            {"steps_follow_max_tokens", !m.defaults.steps.has_value()}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace dllm::server
