// The list of architectures (arch.h).
#include "model/arch.h"

#include <array>

#include "gguf/gguf.h"

namespace dllm::model {

std::span<const Architecture* const> architectures() {
  static const std::array<const Architecture*, 7> all = {
      &kLladaArch, &kDreamArch, &kLladaMoeArch, &kRnd1Arch, &kLlada2Arch, &kGemma4Arch, &kDiffusionGemmaArch};
  return all;
}

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture* a : architectures())
    if (a->name == name) return a;
  return nullptr;
}

void configure_qk_norm_experts(const gguf::GgufFile& file, ModelConfig& c) {
  c.rope_mode = RopeMode::kNeox;
  c.has_qkv_bias = file.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.has_qk_norm = true;
  read_expert_keys(file, c);
}

const Architecture* architecture_of(const gguf::GgufFile& file) {
  return find_architecture(file.find_string("general.architecture").value_or(""));
}

Error missing_tensor(const std::string& name) {
  return Error("required tensor missing: " + name +
               ": the file is incomplete or was not converted for this architecture; convert the model "
               "again with llama.cpp's convert_hf_to_gguf.py, or download the file again");
}

}  // namespace dllm::model
