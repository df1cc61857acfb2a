// See loaded_model.h.
#include "cli/loaded_model.h"

#include "base/error.h"
#include "quant/finite.h"

namespace dllm::cli {

void check_weights_finite(const gguf::GgufFile& file) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    const auto at = quant::first_non_finite(t.type, file.tensor_data(t), t.n_elements());
    if (!at) continue;
    const bool blocks =
        t.type != gguf::GgmlType::F32 && t.type != gguf::GgmlType::F16 && t.type != gguf::GgmlType::BF16;
    throw Error("tensor " + t.name + " (" + gguf::type_name(t.type) + ") holds NaN or Inf (first at " +
                (blocks ? "block " : "element ") + std::to_string(*at) + (blocks ? ", its scale" : "") +
                "): the file is damaged; download it again or convert it again from the original weights");
  }
}

LoadedModel load_model(const std::string& path) {
  LoadedModel m;
  m.path = path;
  m.file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::open(path));
  check_weights_finite(*m.file);
  m.model = std::make_unique<model::Model>(model::Model::load(*m.file));
  return m;
}

}  // namespace dllm::cli
