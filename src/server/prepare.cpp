// See prepare.h.
#include "server/prepare.h"

#include <cctype>
#include <random>

#include "base/error.h"
#include "engine/prompt_notes.h"
#include "engine/prompt_rule.h"
#include "tokenizer/chat.h"

namespace dllm::server {

namespace {

engine::SamplerOptions options_for(const GenerationRequest& r, const engine::SamplerOptions& d) {
  engine::SamplerOptions o = d;
  if (r.max_tokens) o.max_tokens = *r.max_tokens;
  if (r.steps) o.steps = r.steps;
  if (r.block_length) o.block_length = r.block_length;
  if (r.temperature) o.temperature = *r.temperature;
  if (r.seed) o.seed = *r.seed;
  if (r.remasking) o.remasking = r.remasking;
  if (r.alg) o.alg = r.alg;
  if (r.alg_temp) o.alg_temp = r.alg_temp;
  if (r.top_p) o.top_p = r.top_p;
  if (r.top_k) o.top_k = r.top_k;
  if (r.threshold) o.threshold = r.threshold;
  if (r.cfg_scale) o.cfg_scale = *r.cfg_scale;
  if (r.cache) o.cache = *r.cache;
  if (r.edit_threshold) o.edit_threshold = r.edit_threshold;
  if (r.max_post_edit_steps) o.max_post_edit_steps = r.max_post_edit_steps;
  if (r.eb_t_min) o.eb_t_min = r.eb_t_min;
  if (r.eb_t_max) o.eb_t_max = r.eb_t_max;
  if (r.eb_entropy_bound) o.eb_entropy_bound = r.eb_entropy_bound;
  if (r.eb_stability) o.eb_stability = r.eb_stability;
  if (r.eb_confidence) o.eb_confidence = r.eb_confidence;
  return o;
}

/// The request field a schedule error is about: the first field name its message mentions (the
/// engine's checks name the fields under their request names, engine::SettingNames::kFields), or "".
std::string field_named_in(const std::string& message) {
  static const char* const kFields[] = {"max_tokens", "block_length", "steps", "threshold",     "cfg_scale",
                                        "alg_temp",   "top_p",        "top_k", "temperature",   "remasking",
                                        "cache",      "alg",          "seed",  "edit_threshold"};
  std::string best;
  size_t at = std::string::npos;
  for (const char* f : kFields) {
    const std::string name(f);
    for (size_t p = message.find(name); p != std::string::npos; p = message.find(name, p + 1)) {
      auto word = [&](size_t i) {
        return i < message.size() &&
               (std::isalnum(static_cast<unsigned char>(message[i])) || message[i] == '_');
      };
      if ((p > 0 && word(p - 1)) || word(p + name.size())) continue;  // a part of a longer word
      if (p < at) at = p, best = name;
      break;
    }
  }
  return best;
}

}  // namespace

std::variant<PreparedRequest, ApiError> prepare_request(const GenerationRequest& r, const ModelContext& m) {
  const std::string prompt_param = r.endpoint == Endpoint::kChat ? "messages" : "prompt";
  PreparedRequest out;
  try {
    tokenizer::ChatOptions chat;
    chat.parse_special = r.no_special ? !*r.no_special : m.parse_special;
    if (r.endpoint == Endpoint::kChat) {
      chat.messages = r.messages;
      engine::apply_prompt_rule(chat, m.config->arch);  // a base model's messages as raw text
    } else {
      chat.prompt = r.prompt;
      chat.no_chat = true;
    }
    try {
      out.spec.prompt = tokenizer::prompt_tokens(*m.tok, chat);
    } catch (const UsageError& e) {
      return invalid_request(e.what(), prompt_param);
    }
    out.n_prompt = static_cast<int64_t>(out.spec.prompt.size());
    engine::SamplerOptions o = options_for(r, m.defaults);
    if (!r.seed && m.fresh_seed) o.seed = std::random_device{}();
    out.seed = o.seed;
    try {
      engine::check_canvas_fits(out.n_prompt, o.max_tokens, m.max_canvas, "the context", "max_tokens",
                                m.config->canvas_length);
    } catch (const engine::CanvasTooLong& e) {
      return invalid_request(e.what(), e.prompt_alone() ? prompt_param : "max_tokens",
                             "context_length_exceeded");
    }
    out.spec.params = engine::sampler_params(o, *m.config, *m.tok, m.engine->n_vocab(), out.warnings,
                                             engine::SettingNames::kFields);
    out.spec.stream_canvas = r.canvas_events;
    for (const std::string& w : m.engine->check(out.spec)) out.warnings.push_back(w);
    if (auto note = engine::typed_mask_note(*m.tok, out.spec.prompt, out.spec.params.mask_id); !note.empty())
      out.warnings.push_back(note);
  } catch (const UsageError& e) {
    return invalid_request(e.what(), field_named_in(e.what()));
  } catch (const std::exception& e) {
    return internal_error(e.what());
  }
  return out;
}

}  // namespace dllm::server
