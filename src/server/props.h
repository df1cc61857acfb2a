// GET /props: the served model and the settings a request gets when it sends none, in the spirit of
// llama.cpp's server route of the same name (its default_generation_settings, total_slots, n_ctx), so
// a client (the web page, src/server/webui/) can show the model and fill its settings panel.
#pragma once

#include <string>

#include "server/prepare.h"

namespace dllm::server {

/// {"model", "arch", "schedule" (which sampler settings apply: "llada" | "dream" | "block_diffusion"
/// (LLaDA2.x) | "entropy_bound" (DiffusionGemma)), "total_slots" (--parallel), "n_ctx" (the longest
/// canvas), "default_generation_settings", "steps_follow_max_tokens" (true when a request's steps
/// default to its max_tokens: LLaDA and Dream without --steps)}. The settings: max_tokens, steps,
/// seed, and for the masked loops block_length, threshold (null: off), cache, temperature, top_p,
/// top_k, plus remasking and cfg_scale (llada), alg, alg_temp and cfg_scale (dream), edit_threshold
/// (block_diffusion, null: off); for entropy_bound canvas_length and the file's eb_* values (steps is
/// eb_max_steps). They are what engine::sampler_params resolves from the serve command's flags for
/// this architecture, so they are what a request without them runs. Throws what sampler_params
/// throws (a model without a mask token fails to load before this).
std::string props_body(const ModelContext& m, const std::string& model_id);

}  // namespace dllm::server
