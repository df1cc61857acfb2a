// A GGUF file opened and bound as a LLaDA/Dream model, kept together because the Model points into
// the file's mapping: the file must stay at one address for as long as the model lives.
#pragma once

#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "model/model.h"

namespace dllm::cli {

struct LoadedModel {
  std::string path;
  std::unique_ptr<gguf::GgufFile> file;
  std::unique_ptr<model::Model> model;
};

/// Opens `path` (gguf::GgufFile::open) and binds the weights (model::Model::load). Throws the
/// dllm::Error of either step unchanged (their messages are the user-facing ones).
LoadedModel load_model(const std::string& path);

}  // namespace dllm::cli
