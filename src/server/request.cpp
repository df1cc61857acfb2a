// See request.h.
#include "server/request.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>

namespace dllm::server {

namespace {

using nlohmann::json;

// Thrown inside this file only, caught by parse_generation_request: the ApiError to answer with.
struct Reject {
  ApiError error;
};

[[noreturn]] void reject(const std::string& param, const std::string& message) {
  throw Reject{invalid_request(message, param)};
}

// A short rendering of a JSON value for messages: `"abc"`, `1.5`, `[...]` (at most 40 characters).
std::string show(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an integer";
  }
}

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// An integer: a JSON integer, or a float with no fractional part (1.0), as OpenAI accepts.
std::optional<int64_t> whole(const json& obj, const char* name, int64_t min) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      reject(name,
             std::string(name) + " must be a whole number >= " + std::to_string(min) + ", got " + show(*v));
    }
    x = v->get<int64_t>();
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) {
      reject(name,
             std::string(name) + " must be a whole number >= " + std::to_string(min) + ", got " + show(*v));
    }
    x = static_cast<int64_t>(d);
  } else {
    reject(name, std::string(name) + " must be a whole number >= " + std::to_string(min) + ", got " +
                     type_name(*v) + " (" + show(*v) + ")");
  }
  if (x < min) {
    reject(name,
           std::string(name) + " must be a whole number >= " + std::to_string(min) + ", got " + show(*v));
  }
  return x;
}

// A number in [min, max] (or (min, max] when min_exclusive); max may be infinity.
std::optional<double> real(const json& obj, const char* name, double min, double max,
                           bool min_exclusive = false) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  auto range = [&] {
    auto num = [](double d) {
      if (std::isinf(d)) return std::string("inf");
      std::string s = std::to_string(d);
      s.erase(s.find_last_not_of('0') + 1);
      if (s.back() == '.') s.pop_back();
      return s;
    };
    return std::string(min_exclusive ? "(" : "[") + num(min) + ", " + num(max) +
           (std::isinf(max) ? ")" : "]");
  };
  if (!v->is_number()) {
    reject(name, std::string(name) + " must be a number in " + range() + ", got " + type_name(*v) + " (" +
                     show(*v) + ")");
  }
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < min || (min_exclusive && x == min) || x > max) {
    reject(name, std::string(name) + " must be a number in " + range() + ", got " + show(*v));
  }
  return x;
}

/// A number > 0 that stays a positive, finite normal float (the sampler holds temperatures as float:
/// 1e39 would become inf, 1e-50 zero).
std::optional<double> positive_float(const json& obj, const char* name) {
  const std::optional<double> x = real(obj, name, 0, std::numeric_limits<double>::infinity(), true);
  if (x && (*x < std::numeric_limits<float>::min() || *x > std::numeric_limits<float>::max())) {
    char range[96];
    std::snprintf(range, sizeof range, "[%.3g, %.3g]", static_cast<double>(std::numeric_limits<float>::min()),
                  static_cast<double>(std::numeric_limits<float>::max()));
    reject(name,
           std::string(name) + " must be a positive float in " + range + ", got " + show(*field(obj, name)));
  }
  return x;
}

// `param`: the field's full name where it is nested ("dllm.canvas"); `name` by default.
std::optional<bool> boolean(const json& obj, const char* name, const char* param = nullptr) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!param) param = name;
  if (!v->is_boolean()) reject(param, std::string(param) + " must be true or false, got " + type_name(*v));
  return v->get<bool>();
}

std::optional<std::string> one_of(const json& obj, const char* name,
                                  const std::vector<std::string>& choices) {
  const json* v = field(obj, name);
  if (!v) return std::nullopt;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  if (!v->is_string()) reject(name, std::string(name) + " must be one of " + list + ", got " + type_name(*v));
  const std::string s = v->get<std::string>();
  for (const auto& c : choices) {
    if (s == c) return s;
  }
  reject(name, std::string(name) + " must be one of " + list + ", got " + show(*v));
}

// OpenAI message content: a string, or an array of {"type": "text", "text": "..."} parts (joined).
std::string message_content(const json& m, const std::string& where, const std::string& role) {
  const json* c = field(m, "content");
  const std::string param = where + ".content";
  if (!c) {
    // An assistant turn may have no content (tool calls in OpenAI's API); the others must.
    if (role == "assistant") return "";
    reject(param, param + " is missing: every " + role + " message needs its text");
  }
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array())
    reject(param, param + " must be a string or an array of text parts, got " + type_name(*c));
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    const json& part = (*c)[i];
    const std::string pp = param + "[" + std::to_string(i) + "]";
    if (!part.is_object()) reject(pp, pp + " must be an object {\"type\": \"text\", \"text\": ...}");
    const json* type = field(part, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text") {
      reject(pp + ".type", pp + ".type must be \"text\" (this model reads text only), got " +
                               (type ? show(*type) : std::string("nothing")));
    }
    const json* t = field(part, "text");
    if (!t || !t->is_string()) reject(pp + ".text", pp + ".text must be a string");
    text += t->get<std::string>();
  }
  return text;
}

std::vector<tokenizer::ChatMessage> parse_messages(const json& body) {
  const json* ms = field(body, "messages");
  if (!ms)
    reject("messages", "messages is missing: send at least one {\"role\": \"user\", \"content\": ...}");
  if (!ms->is_array()) reject("messages", std::string("messages must be an array, got ") + type_name(*ms));
  if (ms->empty())
    reject("messages", "messages is empty: send at least one {\"role\": \"user\", \"content\": ...}");
  std::vector<tokenizer::ChatMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const json& m = (*ms)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object())
      reject(where, where + " must be an object with role and content, got " + type_name(m));
    const json* role = field(m, "role");
    if (!role) reject(where + ".role", where + ".role is missing (system, user or assistant)");
    if (!role->is_string() || (role->get<std::string>() != "system" && role->get<std::string>() != "user" &&
                               role->get<std::string>() != "assistant")) {
      reject(where + ".role", where + ".role must be system, user or assistant, got " + show(*role));
    }
    const std::string r = role->get<std::string>();
    out.push_back({r, message_content(m, where, r)});
  }
  return out;
}

std::string parse_prompt(const json& body) {
  const json* p = field(body, "prompt");
  if (!p) reject("prompt", "prompt is missing: send the text to continue");
  if (p->is_string()) return p->get<std::string>();
  // OpenAI also accepts a list of prompts (one choice each) or token ids; one text prompt is served.
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) return (*p)[0].get<std::string>();
  reject("prompt", std::string("prompt must be a string (or an array of one string), got ") + type_name(*p) +
                       " (" + show(*p) + "); token ids and several prompts per request are not supported");
}

std::vector<std::string> parse_stop(const json& body) {
  const json* s = field(body, "stop");
  if (!s) return {};
  std::vector<std::string> out;
  if (s->is_string()) {
    out.push_back(s->get<std::string>());
  } else if (s->is_array()) {
    if (s->size() > 4)
      reject("stop", "stop has " + std::to_string(s->size()) + " strings; at most 4 are allowed");
    for (const json& x : *s) {
      if (!x.is_string()) reject("stop", std::string("stop must hold strings, got ") + type_name(x));
      out.push_back(x.get<std::string>());
    }
  } else {
    reject("stop", std::string("stop must be a string or an array of up to 4 strings, got ") + type_name(*s));
  }
  for (const auto& x : out) {
    if (x.empty()) reject("stop", "stop strings must not be empty");
  }
  return out;
}

// What OpenAI's API offers and this server does not: asking for it is a 400 naming the field, so the
// client's error says what is missing instead of an answer that silently lacks it (as llama-server
// refuses `tools` without --jinja). The values that ask for nothing (false, 0, [], "text", "none")
// pass, since clients send them as defaults.
void refuse_unsupported(const json& body) {
  auto no = [](const std::string& field, const std::string& what) {
    reject(field, field + " is not supported: " + what + "; leave it out (or send " +
                      (field == "response_format" ? "{\"type\": \"text\"}" : "null") + ")");
  };
  if (const json* v = field(body, "logprobs");
      v && !(v->is_boolean() && !v->get<bool>()) && !(v->is_number_integer() && v->get<int64_t>() == 0)) {
    no("logprobs",
       "a diffusion model commits tokens out of order and this server returns no log probabilities");
  }
  if (const json* v = field(body, "top_logprobs"); v && !(v->is_number_integer() && v->get<int64_t>() == 0))
    no("top_logprobs", "this server returns no log probabilities");
  const json* choice = field(body, "tool_choice");
  const bool tools_off = choice && choice->is_string() && choice->get<std::string>() == "none";
  for (const char* name : {"tools", "functions"}) {
    if (const json* v = field(body, name); v && !(v->is_array() && v->empty()) && !tools_off)
      no(name, "this server has no tool (function) calling");
  }
  if (const json* v = field(body, "response_format")) {
    const json* type = v->is_object() ? field(*v, "type") : nullptr;
    if (!(type && type->is_string() && type->get<std::string>() == "text"))
      no("response_format", "this server cannot constrain the answer to JSON or a schema");
  }
}

GenerationRequest parse(Endpoint endpoint, std::string_view text, const std::string& model_id) {
  json body;
  try {
    body = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw Reject{
        invalid_request(std::string("the request body is not valid JSON: ") + e.what(), "", "invalid_json")};
  }
  if (!body.is_object()) {
    throw Reject{invalid_request(
        std::string("the request body must be a JSON object, got ") + type_name(body), "", "invalid_json")};
  }
  GenerationRequest r;
  r.endpoint = endpoint;
  if (const json* m = field(body, "model")) {
    if (!m->is_string()) reject("model", std::string("model must be a string, got ") + type_name(*m));
    r.model = m->get<std::string>();
    if (!r.model.empty() && r.model != model_id) {
      throw Reject{{404,
                    "the model " + show(*m) + " does not exist; this server serves '" + model_id +
                        "' (GET /v1/models)",
                    "invalid_request_error", "model", "model_not_found", std::nullopt}};
    }
  }
  if (endpoint == Endpoint::kChat) {
    r.messages = parse_messages(body);
  } else {
    r.prompt = parse_prompt(body);
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  r.max_tokens = whole(body, "max_tokens", 1);
  if (!r.max_tokens) r.max_tokens = whole(body, "max_completion_tokens", 1);
  r.temperature = real(body, "temperature", 0, kInf);
  // OpenAI accepts top_p 0: the smallest nucleus, the most likely token alone. The sampler's range is
  // (0, 1]; its top_p cut keeps the first token whose mass passes top_p * z, so the smallest
  // positive double keeps exactly that one.
  r.top_p = real(body, "top_p", 0, 1);
  if (r.top_p && *r.top_p == 0) r.top_p = std::numeric_limits<double>::min();
  r.top_k = whole(body, "top_k", 0);
  if (auto seed = whole(body, "seed", 0)) r.seed = static_cast<uint64_t>(*seed);
  r.stop = parse_stop(body);
  r.stream = boolean(body, "stream").value_or(false);
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object())
      reject("stream_options", "stream_options must be an object {\"include_usage\": bool}");
    r.include_usage = boolean(*so, "include_usage", "stream_options.include_usage").value_or(false);
  }
  refuse_unsupported(body);
  r.no_special = boolean(body, "no_special");
  if (auto n = whole(body, "n", 1); n && *n != 1) {
    reject("n", "n must be 1: this server returns one choice per request, got " + std::to_string(*n));
  }
  r.steps = whole(body, "steps", 1);
  r.block_length = whole(body, "block_length", 1);
  r.threshold = real(body, "threshold", 0, 1, true);
  r.cache = one_of(body, "cache", {"none", "prefix", "dual", "exact"});
  r.alg = one_of(body, "alg", {"origin", "maskgit_plus", "topk_margin", "entropy"});
  r.alg_temp = real(body, "alg_temp", 0, kInf);
  r.remasking = one_of(body, "remasking", {"low_confidence", "random"});
  r.cfg_scale = real(body, "cfg_scale", 0, kInf);
  r.edit_threshold = real(body, "edit_threshold", 0, 1);
  r.max_post_edit_steps = whole(body, "max_post_edit_steps", 0);
  r.eb_t_min = positive_float(body, "eb_t_min");
  r.eb_t_max = positive_float(body, "eb_t_max");
  r.eb_entropy_bound = real(body, "eb_entropy_bound", 0, kInf);
  r.eb_stability = whole(body, "eb_stability", 0);
  r.eb_confidence = real(body, "eb_confidence", 0, kInf);
  if (const json* d = field(body, "dllm")) {
    if (!d->is_object())
      reject("dllm", std::string("dllm must be an object {\"canvas\": bool}, got ") + type_name(*d));
    r.canvas_events = boolean(*d, "canvas", "dllm.canvas").value_or(false);
  }
  if (r.canvas_events && !r.stream) {
    reject("dllm.canvas", "dllm.canvas streams the canvas after every step: it needs \"stream\": true");
  }
  return r;
}

}  // namespace

std::variant<GenerationRequest, ApiError> parse_generation_request(Endpoint endpoint, std::string_view body,
                                                                   const std::string& model_id) {
  try {
    return parse(endpoint, body, model_id);
  } catch (const Reject& r) {
    return r.error;
  } catch (const std::exception& e) {
    // nlohmann throws type_error on a get<> of the wrong type; the checks above should make that
    // unreachable, but a malformed body must never take the server down.
    return invalid_request(std::string("could not read the request: ") + e.what());
  }
}

}  // namespace dllm::server
