// A parsed request (request.h) made into an engine job with the loaded model: the prompt through the
// chat template (or raw for /v1/completions) and tokenized, the canvas checked against the context,
// the sampler settings of the request over the server's defaults (its `run` flags) through
// engine::sampler_params, and the engine's own checks (`run`'s wording).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "engine/sampler_options.h"
#include "model/config.h"
#include "server/api_error.h"
#include "server/request.h"
#include "tokenizer/tokenizer.h"

namespace dllm::server {

/// What prepare_request needs of the loaded model. All pointers outlive the requests.
struct ModelContext {
  const tokenizer::Tokenizer* tok = nullptr;
  const model::ModelConfig* config = nullptr;
  engine::Engine* engine = nullptr;
  engine::SamplerOptions defaults;  ///< the serve command's run flags
  bool parse_special = true;        ///< false: --no-special (control-token text in messages stays text)
  int64_t max_canvas = 0;           ///< longest prompt + max_tokens: min(model context, --ctx-size)
  bool fresh_seed = false;          ///< no --seed: a request without `seed` gets a random one
};

struct PreparedRequest {
  engine::JobSpec spec;
  int64_t n_prompt = 0;
  uint64_t seed = 0;                  ///< the seed it runs with (the request's, --seed, or a fresh one)
  std::vector<std::string> warnings;  ///< settings ignored for this architecture, check_params' notes
};

/// Never throws: a prompt that is not valid UTF-8, a prompt or canvas longer than max_canvas
/// (400 naming both lengths, code context_length_exceeded) and what the engine refuses (400 with
/// run's message) are ApiErrors; a model-side failure is a 500.
std::variant<PreparedRequest, ApiError> prepare_request(const GenerationRequest& r, const ModelContext& m);

}  // namespace dllm::server
