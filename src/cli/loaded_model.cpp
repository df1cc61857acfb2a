// See loaded_model.h.
#include "cli/loaded_model.h"

namespace dllm::cli {

LoadedModel load_model(const std::string& path) {
  LoadedModel m;
  m.path = path;
  m.file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
  m.model = std::make_unique<model::Model>(model::Model::load(*m.file));
  return m;
}

}  // namespace dllm::cli
