// What `--device auto` may hand to the GPU (engine::auto_keeps_on_cpu), decided from the model and the
// options alone, so it is checked here without a GPU: on an H200 only the Q4_K / Q6_K path matched the
// f64 reference (docs/gpu.md), and the GPU has no MoE, Q/K-norm or cached-step support.
#include <string>

#include <gtest/gtest.h>

#include "engine/backend.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "test_util.h"

namespace {

using dllm::diffusion::CacheMode;
using dllm::engine::auto_keeps_on_cpu;
using dllm::engine::BackendOptions;
using dllm::test::SyntheticSpec;
using dllm::test::WeightMix;

/// auto_keeps_on_cpu for a synthetic model written from `spec`, with `options`.
std::string decision(const SyntheticSpec& spec, const BackendOptions& options = {}) {
  dllm::test::TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  dllm::test::write_synthetic_model(spec, path);
  const auto file = dllm::gguf::GgufFile::open(path);
  const auto model = dllm::model::Model::load(file);
  return auto_keeps_on_cpu(model, options);
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

TEST(AutoDevice, MoeModelsAndCachedStepsStayOnTheCpu) {
  EXPECT_EQ(decision(q4km("llada-moe")), "MoE models run on the CPU only for now");
  BackendOptions o;
  o.cache = CacheMode::kPrefix;
  EXPECT_EQ(decision(q4km("llada"), o), "--cache prefix runs on the CPU only");
}

}  // namespace
