// What --model names: a GGUF file on disk, or a Hugging Face repo `org/repo[:QUANT]` that the hub
// client (src/hub) resolves to a file in the local Hugging Face cache.
#pragma once

#include <string>

#include "hub/hub.h"

namespace dllm::cli {

/// Hub options from the environment (hub::HubOptions::from_env), with --offline applied and the hub's
/// status lines printed to stderr as "dllm: <line>".
hub::HubOptions hub_options(bool offline);

/// The local path of the model --model names. An existing file is returned as is (no network); a
/// directory is an error naming the path; anything else goes through hub::resolve_model (a missing
/// path gives "model file not found: <path>", a repo spec is looked up in the cache or downloaded).
/// Throws dllm::UsageError when `spec` is empty.
std::string resolve_model(const std::string& spec, bool offline);

/// resolve_model, with an empty `spec` meaning the default model (choose_default_model in
/// default_model.h): one "note: no --model given: ..." line on stderr says which. For `run` and
/// `tokenize`, so both feed the same model.
std::string resolve_model_or_default(const std::string& spec, bool offline);

}  // namespace dllm::cli
