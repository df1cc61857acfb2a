// read_config and Model::load on synthetic GGUF files written by the test: values read, conventions
// chosen per architecture, and each load error with its exact message.
#include "model/model.h"
#include "model/arch.h"
#include "model/layer_desc.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "model/synthetic_model.h"
#include "test_util.h"

namespace dllm::model {
namespace {

using test::expect_error;
using test::SyntheticSpec;

/// Writes `spec` and expects Model::load to throw dllm::Error with exactly `message`.
// What a missing tensor's error says after its name.
const std::string kMissingHint =
    ": the file is incomplete or was not converted for this architecture; convert the model again with "
    "llama.cpp's convert_hf_to_gguf.py, or download the file again";

void expect_load_error(const SyntheticSpec& spec, const std::string& message) {
  test::TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  test::write_synthetic_model(spec, path);
  const auto file = gguf::GgufFile::open(path);
  try {
    (void)Model::load(file);
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), message);
    EXPECT_EQ(e.exit_code(), kExitFailure);
  }
}

TEST(Config, LladaFromKeys) {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.rope_base = 500000.0f;
  spec.rms_eps = 1e-5f;
  spec.shift_logits = false;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const Model m = Model::load(file);
  const ModelConfig& c = m.config();
  EXPECT_EQ(c.arch, &kLladaArch);
  EXPECT_EQ(c.arch_name, "llada");
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_embd, 256);
  EXPECT_EQ(c.n_ff, 512);
  EXPECT_EQ(c.n_head, 4);
  EXPECT_EQ(c.n_head_kv, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.n_ctx_train, 4096);
  EXPECT_EQ(c.n_vocab, 97);
  EXPECT_EQ(c.rope_freq_base, 500000.0f);
  EXPECT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.rope_mode, RopeMode::kNorm);
  EXPECT_FALSE(c.has_qkv_bias);
  EXPECT_FALSE(c.shift_logits);
  EXPECT_EQ(m.layers().size(), 2u);
  EXPECT_EQ(m.layers()[1].ffn_down->name, "blk.1.ffn_down.weight");
  EXPECT_TRUE(m.layers()[0].attn_q_bias.empty());
  EXPECT_EQ(&m.output(), file.find_tensor("output.weight"));
}

TEST(Config, DreamFromKeys) {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.arch = "dream";
  spec.n_head_kv = 2;
  spec.rope_base = 1e6f;
  spec.rms_eps = 1e-6f;
  const auto synth = test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const Model m = Model::load(file);
  const ModelConfig& c = m.config();
  EXPECT_EQ(c.arch, &kDreamArch);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
  EXPECT_TRUE(c.has_qkv_bias);
  EXPECT_TRUE(c.shift_logits) << "no diffusion.shift_logits key: Dream shifts";
  EXPECT_EQ(c.rms_eps, 1e-6f);
  // 1-D tensors are decoded to f32 copies.
  const auto& bias = synth["blk.1.attn_k.bias"];
  ASSERT_EQ(m.layers()[1].attn_k_bias.size(), bias.size());
  for (size_t i = 0; i < bias.size(); ++i) EXPECT_EQ(m.layers()[1].attn_k_bias[i], float(bias[i]));
  const auto& norm = synth["output_norm.weight"];
  for (size_t i = 0; i < norm.size(); ++i) EXPECT_EQ(m.output_norm()[i], float(norm[i]));
}

TEST(Config, ShiftFlagAndDefaults) {
  test::TempDir dir;
  for (const auto& [arch, flag, expected] : {std::tuple{"dream", std::optional<bool>(false), false},
                                             std::tuple{"dream", std::optional<bool>(true), true},
                                             std::tuple{"llada", std::optional<bool>(), false}}) {
    SyntheticSpec spec;
    spec.arch = arch;
    spec.shift_logits = flag;
    spec.write_head_count_kv = false;  // defaults to head_count
    spec.omit_keys = {std::string(arch) + ".rope.freq_base"};
    test::write_synthetic_model(spec, (dir / "m.gguf").string());
    const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
    const ModelConfig c = read_config(file);
    EXPECT_EQ(c.shift_logits, expected) << arch;
    EXPECT_EQ(c.n_head_kv, c.n_head);
    EXPECT_EQ(c.rope_freq_base, 10000.0f);
  }
}

TEST(Config, TiedOutputUsesTokenEmbedding) {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.tied_output = true;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const Model m = Model::load(file);
  EXPECT_EQ(&m.output(), &m.token_embd());
  EXPECT_EQ(m.config().n_vocab, 97);
}

TEST(Config, TypeMixCountsBoundTensors) {
  test::TempDir dir;
  SyntheticSpec spec;
  spec.mix = test::WeightMix::kQ4KM;
  spec.n_layer = 4;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const auto mix = Model::load(file).type_mix();
  // 4 layers: 2 norms each + output_norm = 9 F32; Q6_K: output + attn_v/ffn_down of layers 2, 3 = 5.
  const std::vector<std::pair<std::string, int>> expected = {{"F32", 9}, {"Q4_K", 25}, {"Q6_K", 5}};
  EXPECT_EQ(mix, expected);
}

// LLaDA-MoE and RND1 (llama.cpp src/models/llada-moe.cpp, rnd1.cpp): the expert keys, the Q/K norms,
// the router and the 3-D experts; RND1's head_dim from attention.key_length, its n_head * head_dim
// different from n_embd, its renormalised top-k weights.
TEST(Config, MoeArchsFromKeys) {
  for (const std::string arch : {"llada-moe", "rnd1"}) {
    SyntheticSpec spec;
    spec.arch = arch;
    spec.n_expert = 6;
    spec.n_expert_used = 2;
    spec.n_ff_exp = 96;
    if (arch == "rnd1") {
      spec.n_head_kv = 2;
      spec.head_dim = 128;  // 4 x 128 = 512 query columns for n_embd 256
    } else {
      spec.shift_logits = false;
    }
    test::TempDir dir;
    test::write_synthetic_model(spec, (dir / "m.gguf").string());
    const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
    const Model m = Model::load(file);
    const ModelConfig& c = m.config();
    EXPECT_EQ(c.arch, arch == "rnd1" ? &kRnd1Arch : &kLladaMoeArch);
    EXPECT_EQ(std::string(c.arch->name), arch);
    EXPECT_TRUE(c.is_moe());
    EXPECT_EQ(c.n_expert, 6);
    EXPECT_EQ(c.n_expert_used, 2);
    EXPECT_EQ(c.n_ff_exp, 96);
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_EQ(c.rope_mode, RopeMode::kNeox);
    EXPECT_EQ(c.expert_weights_norm, arch == "rnd1");
    EXPECT_EQ(c.head_dim, arch == "rnd1" ? 128 : 64);
    EXPECT_EQ(c.shift_logits, arch == "rnd1");  // rnd1: no key, llama-diffusion-cli shifts
    const LayerWeights& l = m.layers()[1];
    EXPECT_EQ(l.attn_q_norm.size(), static_cast<size_t>(c.head_dim));
    EXPECT_EQ(l.attn_k_norm.size(), static_cast<size_t>(c.head_dim));
    EXPECT_EQ(l.ffn_gate_inp.size(), 6u * 256u);
    EXPECT_EQ(l.ffn_gate, nullptr);
    ASSERT_NE(l.ffn_down_exps, nullptr);
    EXPECT_EQ(l.ffn_down_exps->n_dims, 3u);
    EXPECT_EQ(l.attn_q->ne[1], 4 * c.head_dim);
    EXPECT_EQ(l.attn_output->ne[0], 4 * c.head_dim);
    // Expert e of a 3-D tensor: its n_out rows, e * n_out rows in.
    const gguf::TensorInfo e3 = expert_matrix(*l.ffn_up_exps, 3);
    EXPECT_EQ(e3.name, "blk.1.ffn_up_exps.weight[3]");
    EXPECT_EQ(e3.n_dims, 2u);
    EXPECT_EQ(e3.ne[0], 256);
    EXPECT_EQ(e3.ne[1], 96);
    EXPECT_EQ(file.tensor_data(e3), file.tensor_data(*l.ffn_up_exps) + 3 * 96 * l.ffn_up_exps->row_bytes());
    expect_error(
        [&] { (void)expert_matrix(*l.ffn_up_exps, 6); },
        "expert 6 of tensor blk.1.ffn_up_exps.weight: not a 3-D expert tensor with that many experts");
  }
}

TEST(LoadErrors, MoeKeysAndTensors) {
  SyntheticSpec spec;
  spec.arch = "llada-moe";
  spec.omit_keys = {"llada-moe.expert_count"};
  expect_load_error(spec, "required metadata key missing: llada-moe.expert_count");
  spec.omit_keys = {"llada-moe.expert_used_count"};
  expect_load_error(spec, "required metadata key missing: llada-moe.expert_used_count");
  // Without expert_feed_forward_length llama.cpp takes n_ff / n_expert_used (512 / 2 = 256, which the
  // tensors have); without both keys the expert width is unknown.
  spec.omit_keys = {"llada-moe.expert_feed_forward_length"};
  {
    test::TempDir dir;
    test::write_synthetic_model(spec, (dir / "m.gguf").string());
    const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
    EXPECT_EQ(Model::load(file).config().n_ff_exp, 256);
  }
  spec.omit_keys = {"llada-moe.expert_feed_forward_length", "llada-moe.feed_forward_length"};
  expect_load_error(spec, "required metadata key missing: llada-moe.expert_feed_forward_length");
  spec.omit_keys = {};
  spec.n_expert_used = 9;
  expect_load_error(
      spec,
      "llada-moe.expert_used_count (9) must be in 1..llada-moe.expert_count (8), and expert_count at "
      "most 1024");
  spec.n_expert_used = 2;
  spec.omit_tensors = {"blk.1.attn_k_norm.weight"};
  expect_load_error(spec, "required tensor missing: blk.1.attn_k_norm.weight" + kMissingHint);
  spec.omit_tensors = {"blk.0.ffn_gate_inp.weight"};
  expect_load_error(spec, "required tensor missing: blk.0.ffn_gate_inp.weight" + kMissingHint);
  spec.omit_tensors = {};
  spec.shape_override = {{"blk.0.ffn_down_exps.weight", {256, 256, 7}}};
  expect_load_error(
      spec, "tensor shape mismatch for blk.0.ffn_down_exps.weight: [256, 256, 7], expected [256, 256, 8]");
  spec.shape_override = {{"blk.1.ffn_gate_exps.weight", {256, 512}}};
  expect_load_error(
      spec, "tensor shape mismatch for blk.1.ffn_gate_exps.weight: [256, 512], expected [256, 256, 8]");
  spec.shape_override = {{"blk.0.attn_q_norm.weight", {32}}};
  expect_load_error(spec, "tensor shape mismatch for blk.0.attn_q_norm.weight: [32], expected [64]");
}

TEST(LoadErrors, UnsupportedArchitecture) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  expect_load_error(spec,
                    "unsupported model architecture: qwen2 (supported: llada, dream, llada-moe, rnd1, "
                    "llada2, gemma4, diffusion-gemma)");
}

TEST(Config, PartialRopeFromTheDimensionCount) {
  // rope.dimension_count below head_dim: RoPE on the first n_rot dims of each head (llama.cpp n_rot),
  // in every layer's description; an odd count or one above head_dim is refused naming the key.
  SyntheticSpec spec;
  spec.n_rot = 32;
  test::TempDir dir;
  test::write_synthetic_model(spec, (dir / "m.gguf").string());
  const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
  const Model m = Model::load(file);
  EXPECT_EQ(m.config().n_rot, 32);
  EXPECT_EQ(m.config().head_dim, 64);
  for (const LayerDesc& d : describe_layers(m.config())) EXPECT_EQ(d.n_rot, 32);
  for (const int64_t bad : {int64_t{33}, int64_t{66}}) {
    spec.n_rot = bad;
    expect_load_error(spec, "llada.rope.dimension_count is " + std::to_string(bad) +
                                ": expected an even count of at most head_dim (64)");
  }
}

TEST(LoadErrors, MissingArchitectureKey) {
  SyntheticSpec spec;
  spec.omit_keys = {"general.architecture"};
  expect_load_error(spec, "required metadata key missing: general.architecture");
}

TEST(LoadErrors, MissingRequiredKeys) {
  for (const std::string k : {"block_count", "embedding_length", "feed_forward_length",
                              "attention.head_count", "context_length", "attention.layer_norm_rms_epsilon"}) {
    for (const std::string arch : {"llada", "dream"}) {
      SyntheticSpec spec;
      spec.arch = arch;
      spec.omit_keys = {arch + "." + k};
      expect_load_error(spec, "required metadata key missing: " + arch + "." + k);
    }
  }
}

TEST(LoadErrors, MissingTensor) {
  for (const std::string name : {"token_embd.weight", "output_norm.weight", "blk.1.ffn_up.weight",
                                 "blk.0.attn_norm.weight", "blk.1.attn_output.weight"}) {
    SyntheticSpec spec;
    spec.omit_tensors = {name};
    expect_load_error(spec, "required tensor missing: " + name + kMissingHint);
  }
  SyntheticSpec dream;
  dream.arch = "dream";
  dream.n_head_kv = 2;
  dream.omit_tensors = {"blk.1.attn_v.bias"};
  expect_load_error(dream, "required tensor missing: blk.1.attn_v.bias" + kMissingHint);
}

TEST(LoadErrors, ShapeMismatch) {
  SyntheticSpec spec;
  spec.shape_override = {{"blk.1.attn_k.weight", {256, 128}}};
  expect_load_error(spec, "tensor shape mismatch for blk.1.attn_k.weight: [256, 128], expected [256, 256]");

  spec.shape_override = {{"blk.0.ffn_down.weight", {256, 512}}};
  expect_load_error(spec, "tensor shape mismatch for blk.0.ffn_down.weight: [256, 512], expected [512, 256]");

  spec.shape_override = {{"output_norm.weight", {256, 2}}};
  expect_load_error(spec, "tensor shape mismatch for output_norm.weight: [256, 2], expected [256]");

  SyntheticSpec dream;
  dream.arch = "dream";
  dream.n_head_kv = 2;
  dream.shape_override = {{"blk.0.attn_q.bias", {128}}};
  expect_load_error(dream, "tensor shape mismatch for blk.0.attn_q.bias: [128], expected [256]");
}

TEST(LoadErrors, UnsupportedTensorType) {
  // Types our decoders cannot read at all, where the model itself needs to decode (embedding rows,
  // norm weights, biases).
  SyntheticSpec spec;
  spec.type_override = {{"token_embd.weight", gguf::GgmlType::Q2_K}};
  expect_load_error(spec, "unsupported GGUF tensor type: Q2_K (tensor token_embd.weight)");

  spec.type_override = {{"blk.1.ffn_norm.weight", gguf::GgmlType::IQ4_NL}};
  spec.n_embd = 256;
  expect_load_error(spec, "unsupported GGUF tensor type: IQ4_NL (tensor blk.1.ffn_norm.weight)");
}

TEST(LoadErrors, HeadDimNotExact) {
  SyntheticSpec spec;
  spec.n_embd = 96;
  spec.n_head = 5;
  spec.n_head_kv = 5;
  spec.n_ff = 64;
  // Shapes cannot match a non-integer head_dim; the config check comes first and names both keys.
  test::TempDir dir;
  spec.shape_override = {{"blk.0.attn_q.weight", {96, 96}}, {"blk.1.attn_q.weight", {96, 96}}};
  EXPECT_THROW(
      {
        try {
          test::write_synthetic_model(spec, (dir / "m.gguf").string());
          const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
          (void)Model::load(file);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("llada.attention.head_count"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

// Limits a hostile file cannot pass (docs/reliability.md).

TEST(LoadLimits, BlockCountFarBeyondTheTensorsStopsAtTheFirstMissingBlock) {
  // 2^40 blocks would be ~2^48 bytes of LayerWeights if allocated up front; the file has 2.
  SyntheticSpec spec;
  spec.omit_keys = {"llada.block_count"};
  spec.extra_values = {{"llada.block_count", gguf::make_u64(uint64_t{1} << 40)}};
  expect_load_error(spec, "required tensor missing: blk.2.attn_norm.weight" + kMissingHint);
}

TEST(LoadLimits, VocabularyLongerThanTheEmbeddingRows) {
  SyntheticSpec spec;  // token_embd.weight [256, 97]
  std::vector<gguf::Value> tokens;
  for (int i = 0; i < 98; ++i) tokens.push_back(gguf::make_string("t" + std::to_string(i)));
  spec.extra_values = {{"tokenizer.ggml.tokens", gguf::make_array(gguf::ValueType::STRING, tokens)}};
  expect_load_error(spec,
                    "tokenizer.ggml.tokens has 98 entries but token_embd.weight has only 97 rows (one per "
                    "token id): the file is inconsistent");
  // As many tokens as rows, or fewer (Dream pads its embedding), loads.
  for (int n : {97, 60}) {
    tokens.resize(n);
    spec.extra_values = {{"tokenizer.ggml.tokens", gguf::make_array(gguf::ValueType::STRING, tokens)}};
    test::TempDir dir;
    test::write_synthetic_model(spec, (dir / "m.gguf").string());
    const auto file = gguf::GgufFile::open((dir / "m.gguf").string());
    EXPECT_NO_THROW((void)Model::load(file)) << n << " tokens";
  }
}

}  // namespace
}  // namespace dllm::model
