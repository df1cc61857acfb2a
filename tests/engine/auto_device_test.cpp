// What `--device auto` may hand to the GPU (engine::unsupported, the one check behind auto and --device
// gpu), decided from the model and the options alone, so it is checked here without a GPU: on an H200
// only the Q4_K / Q6_K path matched the f64 reference (docs/gpu.md), and the GPU has no MoE, Q/K-norm,
// partial-RoPE or cached-step support. What it lacks, --device gpu refuses; what it runs unverified, it
// runs.
#include <string>

#include <gtest/gtest.h>

#include "cuda/support.h"
#include "engine/backend.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "test_util.h"

namespace {

using dllm::diffusion::CacheMode;
using dllm::engine::BackendOptions;
using dllm::engine::GpuSupport;
using dllm::engine::unsupported;
using dllm::test::SyntheticSpec;
using dllm::test::WeightMix;

/// unsupported() for a synthetic model written from `spec`, with `options`.
GpuSupport support(const SyntheticSpec& spec, const BackendOptions& options = {}) {
  dllm::test::TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  dllm::test::write_synthetic_model(spec, path);
  const auto file = dllm::gguf::GgufFile::open(path);
  const auto model = dllm::model::Model::load(file);
  return unsupported(model, options);
}

/// Why auto keeps the model on the CPU ("" when the GPU may take it).
std::string decision(const SyntheticSpec& spec, const BackendOptions& options = {}) {
  return support(spec, options).reason();
}

SyntheticSpec q4km(const std::string& arch) {
  SyntheticSpec s;
  s.arch = arch;
  s.mix = WeightMix::kQ4KM;
  return s;
}

TEST(AutoDevice, AQ4KMDenseModelMayGoToTheGpu) {
  EXPECT_EQ(decision(q4km("llada")), "");
  EXPECT_EQ(decision(q4km("dream")), "");
}

TEST(AutoDevice, FloatWeightsStayOnTheCpuNamingTheTensor) {
  SyntheticSpec s = q4km("llada");
  s.mix = WeightMix::kF32;
  const std::string why = decision(s);
  EXPECT_NE(why.find(" is F32: the GPU is checked for Q4_K / Q6_K weights only"), std::string::npos) << why;
  s.mix = WeightMix::kFloatMix;
  EXPECT_NE(decision(s), "");
}

TEST(AutoDevice, AQ8_0MatrixStaysOnTheCpu) {
  SyntheticSpec s = q4km("llada");
  s.type_override["blk.1.ffn_down.weight"] = dllm::gguf::GgmlType::Q8_0;
  EXPECT_EQ(decision(s), "blk.1.ffn_down.weight is Q8_0: the GPU is checked for Q4_K / Q6_K weights only");
}

TEST(AutoDevice, FloatWeightsRunOnAnExplicitGpuTheOthersDoNot) {
  // --device gpu runs what the GPU has kernels for (F32 / F16 / BF16 unverified) and refuses the rest.
  SyntheticSpec s = q4km("llada");
  s.mix = WeightMix::kF32;
  EXPECT_EQ(support(s).lacks, "");
  EXPECT_NE(support(s).unverified, "");
  s = q4km("llada");
  s.type_override["blk.0.attn_k.weight"] = dllm::gguf::GgmlType::Q8_0;
  EXPECT_EQ(support(s).lacks, "blk.0.attn_k.weight is Q8_0: the GPU is checked for Q4_K / Q6_K weights only");
  EXPECT_NE(support(q4km("rnd1")).lacks, "");
}

TEST(AutoDevice, ADenseQkNormModelIsNamedAsSuch) {
  // A dense model with per-head Q/K norm (none of our files, but an architecture may describe one):
  // the reason names the norm, not MoE; a MoE model is named as MoE.
  dllm::test::TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  dllm::test::write_synthetic_model(q4km("llada"), path);
  const auto file = dllm::gguf::GgufFile::open(path);
  dllm::model::ModelConfig c = dllm::model::Model::load(file).config();
  EXPECT_EQ(dllm::cuda::lacks_blocks(c), "");
  c.has_qk_norm = true;
  EXPECT_EQ(dllm::cuda::lacks_blocks(c), "Q/K-norm layers run on the CPU only for now");
  c.n_expert = 4;
  EXPECT_EQ(dllm::cuda::lacks_blocks(c), "MoE models run on the CPU only for now");
}

TEST(AutoDevice, PartialRopeStaysOnTheCpu) {
  SyntheticSpec s = q4km("dream");
  s.n_rot = 32;
  EXPECT_EQ(decision(s), "partial RoPE runs on the CPU only for now");
}

TEST(AutoDevice, MoeModelsAndCachedStepsStayOnTheCpu) {
  EXPECT_EQ(decision(q4km("llada-moe")), "MoE models run on the CPU only for now");
  BackendOptions o;
  o.cache = CacheMode::kPrefix;
  EXPECT_EQ(decision(q4km("llada"), o), "--cache prefix runs on the CPU only");
}

}  // namespace
