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

/// Throws dllm::Error naming the first tensor that holds NaN or Inf (quant/finite.h: float values,
/// quantized blocks' scales), as llama.cpp's --check-tensors would find it; such a file would run and
/// print garbage (or, through the int8 activation path, zeros) without a word.
void check_weights_finite(const gguf::GgufFile& file);

/// Opens `path` (gguf::GgufFile::open), checks the weights are finite (check_weights_finite) and binds
/// them (model::Model::load). Throws the dllm::Error of each step unchanged (their messages are the
/// user-facing ones).
LoadedModel load_model(const std::string& path);

}  // namespace dllm::cli
