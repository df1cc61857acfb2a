// The model the commands use when no --model is given, decided in one place for `run`, `tokenize`,
// `pull` and `doctor` (the ./dllm launcher only passes the arguments on).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hub/hub.h"

namespace dllm::cli {

/// LLaDA-8B-Instruct, Q4_K_M, as converted by llama.cpp: the real model `pull` and `setup` fetch.
inline constexpr const char* kDefaultModelSpec = "mradermacher/LLaDA-8B-Instruct-GGUF:Q4_K_M";
inline constexpr const char* kDefaultModelName = "LLaDA-8B-Instruct Q4_K_M";
/// Its size before it is downloaded (the hub's figure, rounded): for memory checks and questions.
inline constexpr uint64_t kDefaultModelBytes = 5'100'000'000;

/// The demo model bundled with the checkout (models/README.md): 5.5M parameters trained on fairy
/// tales, no chat template. Relative to the source folder.
inline constexpr const char* kDemoModelFile = "models/tiny-llada-fairytales-q4km.gguf";

/// $DLLM_MODEL when set and not empty, else kDefaultModelSpec.
std::string default_model_spec();

/// The bundled demo model's path (DLLM_SOURCE_DIR/kDemoModelFile) when that file exists.
std::optional<std::string> demo_model_path();

/// What a command without --model uses, and the one status line that says so.
struct DefaultChoice {
  enum class Source {
    kEnv,       ///< $DLLM_MODEL
    kCached,    ///< kDefaultModelSpec, in the cache
    kDemo,      ///< the demo model, because kDefaultModelSpec is not cached
    kDownload,  ///< kDefaultModelSpec, to be downloaded (no demo model in this checkout)
  };
  Source source = Source::kDownload;
  std::string spec;  ///< a path or a repo spec, for resolve_model
  std::string note;  ///< "no --model given: using ..." (no trailing newline)
};

/// The rule: $DLLM_MODEL when set (as given, no fallback); else kDefaultModelSpec when it is in the
/// Hugging Face cache; else the demo model when the checkout has it (it runs offline); else
/// kDefaultModelSpec, which resolve_model downloads. Reads the cache only (no network). Never throws.
DefaultChoice choose_default_model(const hub::HubOptions& opts);

/// A prompt that suits the model in `path`: a question for a model with a chat template (an
/// assistant), the start of a story for one without (a plain text model such as the demo). Never
/// throws; an unreadable file gets the question.
std::string suggested_prompt(const std::string& path);

}  // namespace dllm::cli
