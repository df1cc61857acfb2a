// GET /props: the served model and the settings a request gets when it sends none, in the spirit of
// llama.cpp's server route of the same name (its default_generation_settings, total_slots, n_ctx), so
// a client (the web page, src/server/webui/) can show the model and fill its settings panel.
#pragma once

#include <string>

#include "server/prepare.h"

namespace dllm::server {

/// {"model", "arch", "schedule" ("llada" | "dream": which sampler settings apply), "total_slots"
/// (--parallel), "n_ctx" (the longest canvas), "default_generation_settings": {max_tokens, steps,
/// block_length, threshold (null: off), cache, temperature, top_p, top_k, seed, remasking | alg,
/// alg_temp, cfg_scale}, "steps_follow_max_tokens" (true when no --steps was given: a request's steps
/// default to its max_tokens)}. The settings are those engine::sampler_params resolves from the
/// serve command's flags for this architecture, so they are what a request without them runs.
/// Throws what sampler_params throws (a model without a mask token fails to load before this).
std::string props_body(const ModelContext& m, const std::string& model_id);

}  // namespace dllm::server
