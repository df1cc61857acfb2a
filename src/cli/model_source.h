// What --model names: a GGUF file on disk, or a Hugging Face repo `org/repo[:QUANT]` that the hub
// client (src/hub) resolves to a file in the local Hugging Face cache.
#pragma once

#include <string>

namespace dllm::cli {

/// True when `spec` has the form org/repo or org/repo:QUANT (no leading '.' or '/', exactly one '/',
/// not ending in ".gguf"). A spec that names an existing file is always a path, whatever its form.
bool looks_like_hub_spec(const std::string& spec);

/// The local path of the model --model names. An existing file is returned as is; a hub spec goes
/// through the hub client (downloading unless `offline`). Throws dllm::Error
/// "model file not found: <path>" (exit 1) for a missing path, dllm::UsageError when `spec` is empty.
std::string resolve_model(const std::string& spec, bool offline);

}  // namespace dllm::cli
