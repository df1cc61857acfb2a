// Resolution of --model; see model_source.h.
#include "cli/model_source.h"

#include <sys/stat.h>

#include <cstdlib>

#include "base/error.h"

namespace dllm::cli {

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool repo_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

}  // namespace

bool looks_like_hub_spec(const std::string& spec) {
  if (spec.empty() || spec[0] == '.' || spec[0] == '/' || spec[0] == '~') return false;
  if (spec.size() >= 5 && spec.compare(spec.size() - 5, 5, ".gguf") == 0) return false;
  const size_t slash = spec.find('/');
  if (slash == std::string::npos || slash == 0 || spec.find('/', slash + 1) != std::string::npos)
    return false;
  const size_t colon = spec.find(':', slash);
  const size_t repo_end = colon == std::string::npos ? spec.size() : colon;
  if (repo_end == slash + 1) return false;
  for (size_t i = 0; i < repo_end; ++i) {
    if (i != slash && !repo_char(spec[i])) return false;
  }
  if (colon != std::string::npos) {
    if (colon + 1 == spec.size()) return false;
    for (size_t i = colon + 1; i < spec.size(); ++i) {
      if (!repo_char(spec[i])) return false;
    }
  }
  return true;
}

std::string resolve_model(const std::string& spec, bool offline) {
  if (spec.empty()) {
    throw UsageError("no model given: pass --model PATH.gguf or --model org/repo[:QUANT]");
  }
  if (is_regular_file(spec)) return spec;
  if (is_directory(spec)) {
    throw Error("--model " + spec + " is a directory: pass the .gguf file inside it");
  }
  if (looks_like_hub_spec(spec)) {
    throw Error("cannot fetch " + spec +
                " from the Hugging Face hub: this build has no hub client yet (src/hub); "
                "download the .gguf file and pass its path to --model");
  }
  throw Error("model file not found: " + spec);
}

}  // namespace dllm::cli
