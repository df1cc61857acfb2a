// Resolution of --model; see model_source.h.
#include "cli/model_source.h"

#include <sys/stat.h>

#include <cstdio>

#include "base/error.h"
#include "cli/default_model.h"

namespace dllm::cli {

hub::HubOptions hub_options(bool offline) {
  hub::HubOptions opts = hub::HubOptions::from_env();
  opts.offline = opts.offline || offline;
  opts.on_message = [](const std::string& line) { std::fprintf(stderr, "dllm: %s\n", line.c_str()); };
  return opts;
}

std::string resolve_model(const std::string& spec, bool offline) {
  if (spec.empty()) {
    throw UsageError("no model given: pass --model PATH.gguf or --model org/repo[:QUANT]");
  }
  struct stat st {};
  if (::stat(spec.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return spec;
    if (S_ISDIR(st.st_mode))
      throw Error("--model " + spec + " is a directory: pass the .gguf file inside it");
  }
  return hub::resolve_model(spec, hub_options(offline));
}

std::string resolve_model_or_default(const std::string& spec, bool offline) {
  if (!spec.empty()) return resolve_model(spec, offline);
  const DefaultChoice choice = choose_default_model(hub_options(offline));
  std::fprintf(stderr, "note: %s\n", choice.note.c_str());
  return resolve_model(choice.spec, offline);
}

}  // namespace dllm::cli
