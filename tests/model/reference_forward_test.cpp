// The f64 oracle of tests/reference_forward.h checked against llama.cpp itself: on the tiny MoE
// reference models (llama-quantize's files, llama.cpp's logits in ../shared/reference/logits) the
// reference forward, fed the file's decoded weights and rounding every quantized matrix's input as
// ggml-cpu does, must meet the same bounds our forward pass is held to. This is what makes it an
// oracle for the Q/K norm, the routing and the expert sum (the CPU and GPU tests compare with it).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "reference_forward.h"
#include "test_util.h"

namespace dllm {
namespace {

using test::ReferenceForward;

std::vector<float> reference_logits(const ReferenceForward& ref, const std::vector<int32_t>& tokens) {
  const auto rows = ref.forward(tokens);
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

class MoeReferenceForward : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeReferenceForward, MatchesLlamaCpp) {
  const std::string arch = GetParam();
  const auto file = gguf::GgufFile::open(test::reference_model(arch).string());
  const test::SyntheticModel m = test::model_values(file);
  ASSERT_EQ(m.spec.n_expert, 8);
  const ReferenceForward ref{.m = m, .neox = true, .q8k_inputs = true};
  const auto keys = test::reference_sequence_keys(arch, test::SequenceFiles::kLogits);
  ASSERT_FALSE(keys.empty());
  for (const std::string& key : keys) {
    const test::ReferenceSequence s = test::load_reference_sequence(arch, key);
    const test::LogitsFigures f = test::compare_logits(s, reference_logits(ref, s.tokens));
    std::printf(
        "[figures] f64 reference vs llama.cpp, tiny-%s-%s: %zu rows, rel RMS max %.4f median %.4f, "
        "argmax %.1f%%\n",
        arch.c_str(), key.c_str(), s.tokens.size(), f.max_rel, f.median_rel, 100 * f.argmax_agree);
    test::expect_within_reference_bounds(f, key);
  }
  // The comparison can fail: the other RoPE pairing is outside the bounds.
  ReferenceForward wrong = ref;
  wrong.neox = false;
  const test::ReferenceSequence a = test::load_reference_sequence(arch, "a");
  const test::LogitsFigures f = test::compare_logits(a, reference_logits(wrong, a.tokens));
  std::printf(
      "[figures] f64 reference with NORM RoPE vs llama.cpp, tiny-%s-a: rel RMS max %.4f median %.4f\n",
      arch.c_str(), f.max_rel, f.median_rel);
  EXPECT_FALSE(test::within_reference_bounds(f));
}

INSTANTIATE_TEST_SUITE_P(Archs, MoeReferenceForward, ::testing::Values("llada-moe", "rnd1"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace dllm
