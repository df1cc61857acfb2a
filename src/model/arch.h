// An architecture described as data, one file per architecture (llada.cpp, dream.cpp, llada_moe.cpp,
// rnd1.cpp, llada2.cpp): its `{arch}.*` keys beyond the shared ones and what they decide (RoPE pairing,
// biases, Q/K norm, MoE routing, the logit shift), what each of its layers is (layer_desc.h; the tensors a
// layer binds follow from it, tensors.h), the denoising loop it runs by default and its prompt rule.
// Nothing outside src/model decides by architecture: the rest of the program reads these fields.
//
// Adding an architecture whose blocks exist: write its file and list it in architectures()
// (arch.cpp). docs/architecture.md "Adding an architecture" lists what else a new block needs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/error.h"

#include "model/config.h"
#include "model/layer_desc.h"

namespace dllm::gguf {
class GgufFile;
}

namespace dllm::model {

struct Architecture {
  std::string_view name;  ///< general.architecture
  /// After read_config has read the shared keys: the architecture's own keys and the config fields it
  /// decides (rope_mode, has_qkv_bias, has_qk_norm, the routing fields, shift_logits). Throws
  /// dllm::Error naming a missing or invalid key.
  void (*configure)(const gguf::GgufFile& file, ModelConfig& c);
  /// Layer il (0 <= il < c.n_layer).
  LayerDesc (*layer)(const ModelConfig& c, int64_t il);
  DefaultLoop loop;  ///< the denoising loop it runs by default
  /// Prompt rule: non-null for a base model whose prompt is fed as raw text whatever the file's chat
  /// template (run, tokenize and serve's chat route alike); the note that says so.
  const char* raw_prompt_note = nullptr;
  /// An autoregressive language model (gemma4): loaded for `dllm logits` (causal) as a check of a
  /// backbone a diffusion model shares; `run` and `serve` refuse it.
  bool causal_lm = false;
};

/// The error for a tensor the architecture needs and the file lacks: "required tensor missing: <name>"
/// and what to do about it.
Error missing_tensor(const std::string& name);

/// Every architecture this build runs, in the order error messages list them.
std::span<const Architecture* const> architectures();
/// The architecture named `name` (general.architecture), or nullptr.
const Architecture* find_architecture(std::string_view name);
/// The architecture of `file` (its general.architecture), or nullptr for one this build does not run.
const Architecture* architecture_of(const gguf::GgufFile& file);

/// What LLaDA-MoE and RND1 share (Qwen3-MoE-style blocks): NEOX RoPE, q/k/v biases when the file
/// has them, per-head Q/K norm, routed experts from the expert keys (read_expert_keys) with softmax
/// gating, no selection bias, no groups, no shared expert, scale 1.
void configure_qk_norm_experts(const gguf::GgufFile& file, ModelConfig& c);

// The architectures (one file each).
extern const Architecture kLladaArch;           // llada.cpp
extern const Architecture kDreamArch;           // dream.cpp
extern const Architecture kLladaMoeArch;        // llada_moe.cpp
extern const Architecture kRnd1Arch;            // rnd1.cpp
extern const Architecture kLlada2Arch;          // llada2.cpp
extern const Architecture kGemma4Arch;          // gemma4.cpp
extern const Architecture kDiffusionGemmaArch;  // gemma4.cpp

}  // namespace dllm::model
