// See default_model.h.
#include "cli/default_model.h"

#include <cstdlib>
#include <filesystem>

#include "gguf/gguf.h"

namespace dllm::cli {

std::string default_model_spec() {
  const char* env = std::getenv("DLLM_MODEL");
  return env != nullptr && *env != '\0' ? std::string(env) : std::string(kDefaultModelSpec);
}

std::optional<std::string> demo_model_path() {
  const std::filesystem::path p = std::filesystem::path(DLLM_SOURCE_DIR) / kDemoModelFile;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
  return p.string();
}

DefaultChoice choose_default_model(const hub::HubOptions& opts) {
  using Source = DefaultChoice::Source;
  const std::string others = " (--model or DLLM_MODEL picks another)";
  const char* env = std::getenv("DLLM_MODEL");
  if (env != nullptr && *env != '\0') {
    return {Source::kEnv, env, std::string("no --model given: using ") + env + " ($DLLM_MODEL)"};
  }
  const std::string spec = kDefaultModelSpec;
  if (hub::find_cached(spec, opts))
    return {Source::kCached, spec, "no --model given: using " + spec + others};
  if (const auto demo = demo_model_path()) {
    return {Source::kDemo, *demo,
            "no --model given and " + spec + " is not in the cache: using " + kDemoModelFile +
                ", a tiny demo model (5.5M parameters, fairy tales; not an assistant). For " +
                kDefaultModelName + ": ./dllm pull"};
  }
  return {Source::kDownload, spec, "no --model given: using " + spec + others};
}

std::string suggested_prompt(const std::string& path) {
  try {
    const gguf::GgufFile file = gguf::GgufFile::open(path);
    if (file.find("tokenizer.chat_template") == nullptr) return "Once upon a time";
  } catch (const std::exception&) {
  }
  return "What is 2+2?";
}

}  // namespace dllm::cli
