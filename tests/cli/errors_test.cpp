// Every user-facing error of `dllm`, run through the real binary: the exact one-line message on stderr
// and the exit code (1 failure, 2 usage). Malformed model files are written here with GgufWriter from
// the reference tiny LLaDA file with exactly one thing changed, so each file triggers one error.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "base/isa.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "run_binary.h"

namespace dllm::test {
namespace {

using gguf::GgmlType;

/// One tensor as it will be written.
struct TensorSpec {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;
  std::vector<uint8_t> data;
};

/// Copies `src` into `dst`, letting `edit_kv` drop (return false) or change metadata and `edit_tensor`
/// change one tensor's type/shape/data (return false to drop it).
void rewrite_gguf(const std::string& src, const std::string& dst,
                  const std::function<bool(gguf::KeyValue&)>& edit_kv,
                  const std::function<bool(TensorSpec&)>& edit_tensor) {
  const gguf::GgufFile in = gguf::GgufFile::open(src);
  gguf::GgufWriter w(in.version());
  for (gguf::KeyValue kv : in.metadata()) {
    if (kv.key == "general.alignment") continue;  // the writer's default alignment (32) is used
    if (edit_kv && !edit_kv(kv)) continue;
    w.add_value(kv.key, kv.value);
  }
  for (const gguf::TensorInfo& t : in.tensors()) {
    TensorSpec s{t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), {}};
    const uint8_t* p = in.tensor_data(t);
    s.data.assign(p, p + t.n_bytes);
    if (edit_tensor && !edit_tensor(s)) continue;
    w.add_tensor(s.name, s.type, s.ne, s.data.data(), s.data.size());
  }
  w.write(dst);
}

class ModelErrors : public ::testing::Test {
 protected:
  /// Runs `dllm run` on a model file, a short canvas.
  RunResult run_on(const std::string& model) {
    return run_dllm({"run", "--model", model, "--prompt", "Hi", "--max-tokens", "8", "--steps", "8"});
  }
  void expect_error(const RunResult& r, const std::string& message, int exit_code) {
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    EXPECT_EQ(r.err, "ERROR: " + message + "\n");
    EXPECT_EQ(r.out, "");
  }
  TempDir dir_;
};

TEST_F(ModelErrors, UnsupportedArchitecture) {
  DLLM_REQUIRE_REFERENCE();
  const std::string path = (dir_ / "qwen2.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "general.architecture") kv.value.s = "qwen2";
        return true;
      },
      nullptr);
  expect_error(
      run_on(path),
      "unsupported model architecture: qwen2 (supported: llada, dream, llada-moe, rnd1, llada2, gemma4, "
      "diffusion-gemma)",
      1);
}

// LLaDA2's routing keys that contradict each other (tiny-llada2: 16 experts in 4 groups, 2 kept, 4
// used): each gives the one line naming the keys.
TEST_F(ModelErrors, InconsistentLlada2Routing) {
  DLLM_REQUIRE_REFERENCE();
  const std::string src = reference("tiny-llada2-q4km.gguf").string();
  const auto with = [&](const std::string& name, const std::string& key, uint64_t value) {
    const std::string path = (dir_ / name).string();
    rewrite_gguf(
        src, path,
        [&](gguf::KeyValue& kv) {
          if (kv.key == key) kv.value.u = value;
          return true;
        },
        nullptr);
    return path;
  };
  expect_error(run_on(with("groups-3.gguf", "llada2.expert_group_count", 3)),
               "llada2.expert_group_count (3) must divide llada2.expert_count (16) into groups of at least 2 "
               "experts",
               1);
  expect_error(run_on(with("groups-128.gguf", "llada2.expert_group_count", 128)),
               "llada2.expert_group_count (128) exceeds 64", 1);
  expect_error(run_on(with("groups-used-5.gguf", "llada2.expert_group_used_count", 5)),
               "llada2.expert_group_used_count (5) exceeds llada2.expert_group_count (4)", 1);
  expect_error(
      run_on(with("used-9.gguf", "llada2.expert_used_count", 9)),
      "llada2.expert_used_count (9) exceeds the 8 experts of the llada2.expert_group_used_count groups "
      "kept",
      1);
  expect_error(run_on(with("softmax.gguf", "llada2.expert_gating_func", 1)),
               "llada2.expert_gating_func is 1: llada2 runs sigmoid gating (2) only", 1);
  const std::string no_bias = (dir_ / "no-bias.gguf").string();
  rewrite_gguf(src, no_bias, nullptr, [](TensorSpec& t) { return t.name != "blk.1.exp_probs_b.bias"; });
  expect_error(
      run_on(no_bias),
      "required tensor missing: blk.1.exp_probs_b.bias: the file is incomplete or was not converted for this "
      "architecture; convert the model again with llama.cpp's convert_hf_to_gguf.py, or download "
      "the file again",
      1);
}

TEST_F(ModelErrors, MissingMetadataKey) {
  DLLM_REQUIRE_REFERENCE();
  const std::string path = (dir_ / "no-block-count.gguf").string();
  rewrite_gguf(
      llada_path(), path, [](gguf::KeyValue& kv) { return kv.key != "llada.block_count"; }, nullptr);
  expect_error(run_on(path), "required metadata key missing: llada.block_count", 1);
}

// An id key outside the vocabulary: the mask id (required) is an error that says so, not "missing";
// the others are ignored as llama.cpp ignores them, with a warning naming the key.
TEST_F(ModelErrors, MaskTokenIdOutOfRange) {
  const size_t n_tokens = gguf::GgufFile::open(llada_path()).get_string_array("tokenizer.ggml.tokens").size();
  const std::string path = (dir_ / "mask-99999.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.ggml.mask_token_id") kv.value.u = 99999;
        return true;
      },
      nullptr);
  expect_error(run_on(path),
               "tokenizer.ggml.mask_token_id is 99999, outside the vocabulary of " +
                   std::to_string(n_tokens) +
                   " tokens (tokenizer.ggml.tokens): the file's metadata is broken (a diffusion model's mask "
                   "token must be one of its tokens)",
               1);
  const std::string gone = (dir_ / "no-mask.gguf").string();
  rewrite_gguf(
      llada_path(), gone, [](gguf::KeyValue& kv) { return kv.key != "tokenizer.ggml.mask_token_id"; },
      nullptr);
  const RunResult r = run_on(gone);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("tokenizer.ggml.mask_token_id missing"), std::string::npos) << r.err;
}

TEST_F(ModelErrors, EosOutOfRangeAndVocabSizeMismatchWarn) {
  const size_t n_tokens = gguf::GgufFile::open(llada_path()).get_string_array("tokenizer.ggml.tokens").size();
  const std::string path = (dir_ / "eos-vocab.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.ggml.eos_token_id") kv.value.u = 99999;
        if (kv.key == "llada.vocab_size") kv.value.u = 50000;
        return true;
      },
      nullptr);
  const RunResult r = run_on(path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string vocab =
      "the vocabulary of " + std::to_string(n_tokens) + " tokens (tokenizer.ggml.tokens)";
  EXPECT_NE(r.err.find("warning: tokenizer.ggml.eos_token_id is 99999, outside " + vocab + ": ignored"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("warning: llada.vocab_size is 50000 but tokenizer.ggml.tokens has " +
                       std::to_string(n_tokens) + " entries"),
            std::string::npos)
      << r.err;
  // The reference file itself draws neither.
  const RunResult ok = run_on(llada_path());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning:"), std::string::npos) << ok.err;
}

TEST_F(ModelErrors, SystemOnAModelWithoutChatTemplateWarns) {
  const std::string path = (dir_ / "no-template.gguf").string();
  rewrite_gguf(
      llada_path(), path, [](gguf::KeyValue& kv) { return kv.key != "tokenizer.chat_template"; }, nullptr);
  const RunResult r =
      run_dllm({"run", "--model", path, "--prompt", "Hi", "--max-tokens", "8", "--system", "Be brief."});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --system is ignored: this model has no chat template"), std::string::npos)
      << r.err;
}

TEST_F(ModelErrors, TensorShapeMismatch) {
  DLLM_REQUIRE_REFERENCE();
  // [256, 768] -> [768, 256]: same Q4_K byte count (768 rows x 1 block vs 256 rows x 3 blocks).
  const std::string path = (dir_ / "shape.gguf").string();
  rewrite_gguf(llada_path(), path, nullptr, [](TensorSpec& t) {
    if (t.name == "blk.0.ffn_gate.weight") {
      EXPECT_EQ(t.ne, (std::vector<int64_t>{256, 768}));
      t.ne = {768, 256};
    }
    return true;
  });
  expect_error(run_on(path),
               "tensor shape mismatch for blk.0.ffn_gate.weight: [768, 256], expected [256, 768]", 1);
}

TEST_F(ModelErrors, UnsupportedTensorType) {
  DLLM_REQUIRE_REFERENCE();
  // Q2_K: a valid ggml type (256 values in 84 bytes) that no decoder of ours reads, on the token
  // embedding, which the model decodes row by row. (On a matrix the backend's kernel error comes
  // first: see MatrixKernelType.)
  const std::string path = (dir_ / "q2k.gguf").string();
  rewrite_gguf(llada_path(), path, nullptr, [](TensorSpec& t) {
    if (t.name == "token_embd.weight") {
      t.type = GgmlType::Q2_K;
      t.data.assign(static_cast<size_t>(t.ne[1]) * (t.ne[0] / 256) * 84, 0);
    }
    return true;
  });
  expect_error(run_on(path), "unsupported GGUF tensor type: Q2_K (tensor token_embd.weight)", 1);
}

TEST_F(ModelErrors, MatrixKernelType) {
  DLLM_REQUIRE_REFERENCE();
  // The model binds a matrix of any type (only the embedding is decoded row by row), but Q4_0 has no
  // matrix kernel: the CPU backend refuses it.
  const std::string path = (dir_ / "q4_0.gguf").string();
  rewrite_gguf(llada_path(), path, nullptr, [](TensorSpec& t) {
    if (t.name == "blk.0.attn_q.weight") {
      t.type = GgmlType::Q4_0;
      t.data.assign(static_cast<size_t>(t.ne[1]) * (t.ne[0] / 32) * 18, 0);
    }
    return true;
  });
  const std::string message =
      "tensor blk.0.attn_q.weight is Q4_0: matrix kernels exist for Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, F32, F16, "
      "BF16";
  expect_error(run_on(path), message, 1);
  const std::string out = (dir_ / "logits.f32").string();
  expect_error(run_dllm({"logits", "--model", path, "--tokens", "1 2 3", "--out", out}), message, 1);
}

TEST_F(ModelErrors, MissingTensor) {
  DLLM_REQUIRE_REFERENCE();
  const std::string path = (dir_ / "no-output-norm.gguf").string();
  rewrite_gguf(llada_path(), path, nullptr, [](TensorSpec& t) { return t.name != "output_norm.weight"; });
  expect_error(
      run_on(path),
      "required tensor missing: output_norm.weight: the file is incomplete or was not converted for this "
      "architecture; convert the model again with llama.cpp's convert_hf_to_gguf.py, or download "
      "the file again",
      1);
}

TEST_F(ModelErrors, UnknownPreTokenizer) {
  DLLM_REQUIRE_REFERENCE();
  const std::string path = (dir_ / "pre.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.ggml.pre") kv.value.s = "mystery-pre";
        return true;
      },
      nullptr);
  for (const RunResult& r : {run_on(path), run_dllm({"tokenize", "--model", path, "--prompt", "Hi"})}) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("mystery-pre"), std::string::npos) << r.err;
  }
}

TEST_F(ModelErrors, UnknownChatTemplateSuggestsNoChat) {
  DLLM_REQUIRE_REFERENCE();
  const std::string path = (dir_ / "template.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.chat_template") kv.value.s = "{{ messages }} in a template nobody knows";
        return true;
      },
      nullptr);
  const RunResult r = run_on(path);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--no-chat"), std::string::npos) << r.err;
  const RunResult raw =
      run_dllm({"run", "--model", path, "--prompt", "Hi", "--max-tokens", "8", "--steps", "8", "--no-chat"});
  EXPECT_EQ(raw.exit_code, 0) << raw.err;
}

TEST_F(ModelErrors, TruncatedFile) {
  DLLM_REQUIRE_REFERENCE();
  const std::vector<char> bytes = read_file(llada_path());
  ASSERT_GT(bytes.size(), 2000000u);
  // Cut in the header (metadata), in the tensor directory region, and in the tensor data.
  for (size_t n : {size_t{24}, size_t{100000}, size_t{2000000}, bytes.size() - 1}) {
    const std::string path = (dir_ / ("cut-" + std::to_string(n) + ".gguf")).string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
    for (const char* cmd : {"run", "inspect"}) {
      const RunResult r = std::string(cmd) == "run" ? run_on(path) : run_dllm({"inspect", path});
      EXPECT_EQ(r.exit_code, 1) << cmd << " on " << n << " bytes: " << r.err;
      EXPECT_TRUE(is_one_error_line(r.err)) << cmd << " on " << n << " bytes: " << r.err;
      EXPECT_EQ(r.out, "") << cmd << " on " << n << " bytes";
    }
  }
}

TEST_F(ModelErrors, NotAGgufFile) {
  const std::string path = (dir_ / "text.gguf").string();
  std::ofstream(path) << "this is not a GGUF file, just some text long enough to read a header from";
  const RunResult r = run_on(path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
}

// `dllm serve` on a file that does not load: the port opened first (so /health can say "loading"),
// then the load failed; the process ends with exit 1 and the one ERROR line, no "stopping" line of
// a signal nobody sent.
// NaN or Inf in the weights (a norm's F32 values, a Q4_K block's scale) is one ERROR naming the tensor,
// for run, logits and serve alike; without the check the file ran, exit 0, and printed "!!!!!!!!".
TEST_F(ModelErrors, NonFiniteWeightsAreNamed) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* tensor;
    std::function<void(std::vector<uint8_t>&)> damage;
    std::string where;
  } cases[] = {
      {"blk.0.attn_norm.weight", [&](auto& d) { std::memcpy(d.data() + 3 * 4, &nan, 4); },
       "F32) holds NaN or Inf (first at element 3)"},
      {"output_norm.weight", [&](auto& d) { std::memcpy(d.data() + 7 * 4, &inf, 4); },
       "F32) holds NaN or Inf (first at element 7)"},
      // block_q4_K: d (f16) at byte 0 of each 144-byte block; 0x7E00 is an f16 NaN.
      {"blk.0.attn_q.weight",
       [](auto& d) {
         d[2 * 144] = 0x00;
         d[2 * 144 + 1] = 0x7E;
       },
       "Q4_K) holds NaN or Inf (first at block 2, its scale)"},
  };
  for (const Case& c : cases) {
    const std::string path = (dir_ / (std::string(c.tensor) + ".gguf")).string();
    rewrite_gguf(llada_path(), path, nullptr, [&](TensorSpec& t) {
      if (t.name == c.tensor) c.damage(t.data);
      return true;
    });
    const std::string message =
        "tensor " + std::string(c.tensor) + " (" + c.where +
        ": the file is damaged; download it again or convert it again from the original weights";
    expect_error(run_on(path), message, 1);
    const RunResult logits =
        run_dllm({"logits", "--model", path, "--tokens", "1 2 3", "--out", (dir_ / "l.bin").string()});
    EXPECT_EQ(logits.exit_code, 1) << logits.err;
    EXPECT_EQ(logits.err, "ERROR: " + message + "\n");
  }
}

// A mask id equal to an end token: refused (an answer could never end), where it ran without a word.
TEST_F(ModelErrors, MaskTokenEqualToEosIsRefused) {
  const std::string path = (dir_ / "mask-eos.gguf").string();
  const uint64_t eos = gguf::GgufFile::open(llada_path()).get_u32("tokenizer.ggml.eos_token_id");
  rewrite_gguf(
      llada_path(), path,
      [&](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.ggml.mask_token_id") kv.value.u = eos;
        return true;
      },
      nullptr);
  expect_error(run_on(path),
               "tokenizer.ggml.mask_token_id and tokenizer.ggml.eos_token_id are both " +
                   std::to_string(eos) +
                   ": the file's metadata is broken (a masked position would read as the answer's end)",
               1);
}

// A BOS id outside the vocabulary in a file whose add_bos_token is true: one ERROR, not a warning
// that it is ignored followed by an ERROR that it is missing.
TEST_F(ModelErrors, BosOutOfRangeWithAddBosIsOneError) {
  const size_t n_tokens = gguf::GgufFile::open(llada_path()).get_string_array("tokenizer.ggml.tokens").size();
  const std::string path = (dir_ / "bos-99999.gguf").string();
  rewrite_gguf(
      llada_path(), path,
      [](gguf::KeyValue& kv) {
        if (kv.key == "tokenizer.ggml.bos_token_id") kv.value.u = 99999;
        return true;
      },
      nullptr);
  expect_error(
      run_on(path),
      "tokenizer.ggml.bos_token_id is 99999, outside the vocabulary of " + std::to_string(n_tokens) +
          " tokens (tokenizer.ggml.tokens), and tokenizer.ggml.add_bos_token is true: the prompt needs a "
          "BOS token this file does not have; the file's metadata is broken",
      1);
}

TEST_F(ModelErrors, ServeOnABadFileEndsWithTheErrorOnly) {
  const std::string path = (dir_ / "text.gguf").string();
  std::ofstream(path) << "this is not a GGUF file, just some text long enough to read a header from";
  const RunResult r = run_dllm({"serve", "--model", path, "--host", "127.0.0.1", "--port", "0"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.find("stopping"), std::string::npos) << r.err;
  size_t errors = 0;
  for (size_t at = r.err.find("ERROR: "); at != std::string::npos; at = r.err.find("ERROR: ", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << r.err;
}

/// Malformed GGUF files through the binary (the reader's own tests cover every field; these check that
/// each class of damage reaches the user as one ERROR line naming the file and the problem, exit 1).
/// The file: 2 F32 tensors "t0" [32] and "t1" [32], no metadata, so every offset is known:
/// magic 0, version 4, counts 8/16, tensor info k at 24 + k * 48: name length (8), name (2), n_dims (4),
/// ne[0] (8), type (4), offset (8).
class GgufDamage : public ::testing::Test {
 protected:
  static constexpr size_t kInfo0 = 24, kInfoSize = 8 + 2 + 4 + 8 + 4 + 8;
  std::vector<uint8_t> base() {
    gguf::GgufWriter w;
    std::vector<float> x(32, 1.0f);
    w.add_tensor("t0", GgmlType::F32, {32}, x.data(), x.size() * 4);
    w.add_tensor("t1", GgmlType::F32, {32}, x.data(), x.size() * 4);
    return w.to_bytes();
  }
  template <typename T>
  static void put(std::vector<uint8_t>& b, size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof v);
  }
  void expect_damage(const std::vector<uint8_t>& bytes, const std::string& needle) {
    const std::string path = (dir_ / "damaged.gguf").string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"inspect", path}, {"run", "--model", path, "--prompt", "Hi", "--max-tokens", "8"}}) {
      const RunResult r = run_dllm(args);
      EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
      EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(needle), std::string::npos) << "want '" << needle << "' in: " << r.err;
      EXPECT_EQ(r.out, "");
    }
  }
  TempDir dir_;
};

TEST_F(GgufDamage, TheUndamagedFileOpens) {
  const std::string path = (dir_ / "ok.gguf").string();
  const std::vector<uint8_t> b = base();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
  const RunResult r = run_dllm({"inspect", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("t1"), std::string::npos);
}

TEST_F(GgufDamage, WrongMagic) {
  auto b = base();
  b[3] = 'X';
  expect_damage(b, "not a GGUF file");
}

TEST_F(GgufDamage, UnsupportedVersion) {
  auto b = base();
  put<uint32_t>(b, 4, 7);
  expect_damage(b, "unsupported GGUF version 7");
}

TEST_F(GgufDamage, TooManyDimensions) {
  auto b = base();
  put<uint32_t>(b, kInfo0 + 10, 5);
  expect_damage(b, "n_dims 5");
}

TEST_F(GgufDamage, UnknownGgmlType) {
  auto b = base();
  put<uint32_t>(b, kInfo0 + 10 + 4 + 8, 1234);
  expect_damage(b, "unknown ggml type id 1234");
}

TEST_F(GgufDamage, DuplicateTensorName) {
  auto b = base();
  ASSERT_EQ(b[kInfo0 + kInfoSize + 9], '1');
  b[kInfo0 + kInfoSize + 9] = '0';  // "t1" -> "t0"
  expect_damage(b, "duplicate tensor name 't0'");
}

TEST_F(GgufDamage, TensorDataPastTheEnd) {
  auto b = base();
  put<uint64_t>(b, kInfo0 + kInfoSize + 10 + 4 + 8 + 4, uint64_t{1} << 40);
  expect_damage(b, "past the end of the file");
}

TEST_F(GgufDamage, EmptyFile) {
  expect_damage({}, "empty");
}

TEST(CliErrors, MissingModelFile) {
  const std::string path = "/nonexistent-dir/model.gguf";
  for (const char* cmd : {"run", "tokenize"}) {
    const RunResult r = run_dllm({cmd, "--model", path, "--prompt", "Hi"});
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("model file not found"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  }
  const RunResult r = run_dllm({"inspect", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
}

TEST(CliErrors, BadFlag) {
  const RunResult r = run_dllm({"run", "--model", llada_path(), "--bogus", "Hi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dllm run --help"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// A stray word: run and tokenize take a prompt, so the hint says to quote it; inspect takes none.
TEST(CliErrors, StrayWordHintOnlyWhereAPromptIsTaken) {
  RunResult r = run_dllm({"tokenize", "--model", llada_path(), "two", "words"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("quote a prompt of several words"), std::string::npos) << r.err;
  r = run_dllm({"inspect", llada_path(), "extra"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("extra"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("prompt"), std::string::npos) << r.err;
}

// logits --tokens "" is no token ids: the message says the list must not be empty.
TEST(CliErrors, LogitsWithAnEmptyTokenList) {
  TempDir dir;
  const RunResult r =
      run_dllm({"logits", "--model", llada_path(), "--tokens", "", "--out", (dir / "l.f32").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("(not empty)"), std::string::npos) << r.err;
}

TEST(CliErrors, BadFlagValues) {
  const std::vector<std::vector<std::string>> cases = {
      {"--max-tokens", "abc"}, {"--max-tokens", "0"}, {"--steps", "-3"},       {"--temperature", "-1"},
      {"--remasking", "best"}, {"--alg", "greedy"},   {"--top-p", "1.5"},      {"--isa", "neon"},
      {"--threads", "-1"},     {"--threshold", "2"},  {"--block-length", "0"}, {"--device", "tpu"},
      {"--gpu-gemm", "fp8"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", c[0], c[1]});
    EXPECT_EQ(r.exit_code, 2) << c[0] << " " << c[1] << ": " << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(c[0]), std::string::npos) << r.err;
  }
}

// Where the CPU or OS lacks AMX, --isa amx is a usage error naming what is missing; where it has
// AMX, the run succeeds and --json says the tile path ran.
TEST(CliErrors, IsaAmxRunsOrSaysWhatIsMissing) {
  const RunResult r = run_dllm(
      {"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--isa", "amx", "--json"});
  if (isa_supported(Isa::kAmx)) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\"amx\":\"running\""), std::string::npos) << r.out;
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--isa amx: this CPU/OS lacks"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(amx_unavailable_reason()), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(CliErrors, GpuDeviceRunsOrSaysWhyNot) {
  DLLM_REQUIRE_REFERENCE();
  // With a usable GPU in a CUDA build this runs; anywhere else it is one line naming the way out.
  const RunResult r =
      run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8", "--device", "gpu"});
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("--device cpu"), std::string::npos) << r.err;
  }
}

TEST(CliErrors, InvalidCombinationNamesTheChoices) {
  DLLM_REQUIRE_REFERENCE();
  // LLaDA: max_tokens must be a multiple of block_length, steps a multiple of the block count.
  RunResult r = run_dllm(
      {"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "48", "--block-length", "32"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "64", "--steps", "5"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
}

TEST(CliErrors, UnknownCommandSuggestsTheClosest) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"rnu", "run"},
                                                                  {"tokenise", "tokenize"},
                                                                  {"inspekt", "inspect"},
                                                                  {"logit", "logits"},
                                                                  {"hlep", "help"}};
  for (const auto& [word, want] : cases) {
    const RunResult r = run_dllm({word, "--model", llada_path()});
    EXPECT_EQ(r.exit_code, 2) << word;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("did you mean '" + want + "'"), std::string::npos) << r.err;
  }
  const RunResult r = run_dllm({"help", "rnu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'run'"), std::string::npos) << r.err;
}

TEST(CliErrors, UnknownCommandFarFromEveryNameListsThem) {
  // "frobnicate" is 7+ edits from every command, "rm" 2 edits from "run" (its whole length): a
  // suggestion would be noise, so the message lists the commands instead.
  for (const char* word : {"frobnicate", "rm", "xyz"}) {
    const RunResult r = run_dllm({word});
    EXPECT_EQ(r.exit_code, 2) << word;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(std::string("unknown command '") + word + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("run, tokenize, inspect, logits, pull, help, doctor, setup, serve"),
              std::string::npos)
        << r.err;
  }
  const RunResult r = run_dllm({"help", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_EQ(r.err.find("did you mean"), std::string::npos) << r.err;
}

int logical_cpus_here() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

TEST(CliErrors, ThreadsOutsideTheRangeNameTheFlag) {
  // The cap is 4 x the logical CPUs (src/cli/common_flags.h max_threads); 1000 is above it on any
  // machine with fewer than 250 CPUs.
  const int cap = 4 * logical_cpus_here();
  for (const std::string& t : {std::to_string(cap + 1), std::string("1000"), std::string("-1")}) {
    if (t == "1000" && cap >= 1000) continue;
    const RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--threads", t});
    EXPECT_EQ(r.exit_code, 2) << t << ": " << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("to " + std::to_string(cap)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'" + t + "'"), std::string::npos) << r.err;
    const RunResult l = run_dllm({"logits", "--model", llada_path(), "--tokens", "1", "--out", "x", "-t", t});
    EXPECT_EQ(l.exit_code, 2) << t << ": " << l.err;
    EXPECT_NE(l.err.find("--threads"), std::string::npos) << l.err;
  }
}

TEST(CliErrors, PullNamesItsArgumentAndTheForms) {
  // No network: the spec is rejected before any request (HF_HUB_OFFLINE as a guard anyway).
  for (const char* spec : {"not a spec", "org/repo:Q4 K", "a/b/c"}) {
    const RunResult r = run_dllm({"pull", spec}, {"HF_HUB_OFFLINE=1"});
    EXPECT_EQ(r.exit_code, 2) << spec << ": " << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_EQ(r.err.find("--model"), std::string::npos) << r.err;  // pull has no --model flag
    EXPECT_NE(r.err.find(std::string("pull: '") + spec + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("org/repo "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("org/repo:QUANT"), std::string::npos) << r.err;
  }
}

TEST(CliErrors, LogitsOutThatCannotBeWritten) {
  // Checked before the model loads: one line naming the path and the reason, nothing written.
  TempDir dir;
  const std::string folder = dir.path().string();
  RunResult r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--out", folder});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--out " + folder + " is a directory"), std::string::npos) << r.err;
  const std::string missing = folder + "/no-such-folder/logits.f32";
  r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--out", missing});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(folder + "/no-such-folder does not exist"), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CliErrors, LogitsOutThatIsNotARegularFileStaysWhatItIs) {
  DLLM_REQUIRE_REFERENCE();
  // A symlink keeps pointing at its target, which receives the logits (also when the target does not
  // exist yet); a device stays a device. A temporary file renamed over --out itself would have
  // replaced either with a regular file.
  TempDir dir;
  const auto target = dir.path() / "target.f32";
  const auto link = dir.path() / "link.f32";
  { std::ofstream(target) << "old"; }
  std::filesystem::create_symlink(target, link);
  const auto plain = dir.path() / "plain.f32";
  RunResult r = run_dllm(
      {"logits", "--model", llada_path(), "--tokens", "1 2", "--rows", "1", "--out", plain.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--rows", "1", "--out", link.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read_file(target), read_file(plain));
  const auto dangling = dir.path() / "dangling.f32";
  std::filesystem::create_symlink("new-target.f32", dangling);
  r = run_dllm(
      {"logits", "--model", llada_path(), "--tokens", "1 2", "--rows", "1", "--out", dangling.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(dangling));
  EXPECT_EQ(read_file(dir.path() / "new-target.f32"), read_file(plain));
  r = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--out", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_character_file("/dev/null"));
}

TEST(CliErrors, StdoutThatCannotBeWritten) {
  DLLM_REQUIRE_REFERENCE();
  // The answer must not vanish with exit 0: /dev/full fails every write (ENOSPC).
  if (!std::filesystem::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tokenize", "--model", llada_path(), "--prompt", "Hi"},
        std::vector<std::string>{"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                                 "--block-length", "8", "--steps", "8"}}) {
    const RunResult r = run_dllm(args, {}, "/dev/full");
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
    EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << r.err;
  }
}

TEST(CliErrors, LogitsLongerThanTheModelContext) {
  DLLM_REQUIRE_REFERENCE();
  const gguf::GgufFile f = gguf::GgufFile::open(llada_path());
  const uint64_t n_ctx = f.get_u64("llada.context_length");
  std::string tokens;
  for (uint64_t i = 0; i <= n_ctx; ++i) tokens += "1 ";
  TempDir dir;
  const RunResult r = run_dllm({"logits", "--model", llada_path(), "--tokens", tokens, "--rows", "0", "--out",
                                (dir.path() / "l.f32").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(std::to_string(n_ctx + 1) + " tokens given"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("context of " + std::to_string(n_ctx) + " tokens"), std::string::npos) << r.err;
}

TEST(CliErrors, TokenFileProblems) {
  TempDir dir;
  const std::string missing = (dir.path() / "nope.txt").string();
  const std::string out = (dir.path() / "l.f32").string();
  RunResult r = run_dllm({"logits", "--model", llada_path(), "--tokens-file", missing, "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find(missing + " (No such file or directory)"), std::string::npos) << r.err;
  // A binary file without the .i32 suffix: the message shows its first bytes escaped and short, and
  // says what a binary ids file is called; a bad file is a failure (1), not a usage error.
  const auto binary = dir.path() / "ids.bin";
  {
    std::ofstream o(binary, std::ios::binary);
    const char bytes[] = {'G', 'G', 'U', 'F', 3, 0, 0, 0, '\x7f', 1, 2, 3};
    o.write(bytes, sizeof bytes);
  }
  r = run_dllm({"logits", "--model", llada_path(), "--tokens-file", binary.string(), "--out", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("'GGUF\\x03\\x00\\x00\\x00\\x7f\\x01\\x02\\x03'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".i32"), std::string::npos) << r.err;
  for (const char c : r.err.substr(0, r.err.size() - 1)) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << int(c);
}

TEST(CliErrors, BadIsaVariableIsNamed) {
  DLLM_REQUIRE_REFERENCE();
  const RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "Hi", "--max-tokens", "8",
                                "--block-length", "8", "--steps", "8"},
                               {"DLLM_CPU_ISA=bogus"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("DLLM_CPU_ISA"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'bogus'"), std::string::npos) << r.err;
}

TEST(CliErrors, NoModelOrNoPrompt) {
  // `run` and `tokenize` without --model use the default model (defaults_test.cpp); `logits` needs one.
  TempDir dir;
  RunResult r = run_dllm({"logits", "--tokens", "1 2", "--out", (dir / "l.f32").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  DLLM_REQUIRE_REFERENCE();
  r = run_dllm({"run", "--model", llada_path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
}

TEST(CliErrors, LongerThanTheModelContext) {
  DLLM_REQUIRE_REFERENCE();
  // tiny-llada: llada.context_length = 4096 (reference README). Canvas: 18 prompt + 5000 masks.
  const gguf::GgufFile f = gguf::GgufFile::open(llada_path());
  const uint64_t n_ctx = f.get_u64("llada.context_length");
  RunResult r = run_dllm({"run", "--model", llada_path(), "--prompt", "What is 2+2?", "--max-tokens", "5000",
                          "--block-length", "5000"});
  EXPECT_EQ(r.exit_code, 2);  // a usage error: shorten the prompt or --max-tokens
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("5018"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(std::to_string(n_ctx)), std::string::npos) << r.err;
  // The prompt alone: ~n_ctx + 100 tokens of " hello".
  std::string prompt;
  for (uint64_t i = 0; i < n_ctx + 100; ++i) prompt += " hello";
  r = run_dllm({"run", "--model", llada_path(), "--prompt", prompt, "--no-chat", "--max-tokens", "8"});
  EXPECT_EQ(r.exit_code, 2);  // a usage error: shorten the prompt
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  // The prompt's own length and the context, and only the fix that can work: lowering --max-tokens
  // cannot make a prompt that alone overflows the context fit.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("prompt is ([0-9]+) tokens"))) << r.err;
  const uint64_t n_prompt = std::stoull(m[1].str());
  EXPECT_GT(n_prompt, n_ctx);
  EXPECT_LE(n_prompt, n_ctx + 102);  // " hello" is one token; BOS at most
  EXPECT_NE(r.err.find("context is " + std::to_string(n_ctx) + " tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("shorten the prompt"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--max-tokens"), std::string::npos) << r.err;
  // Prompt and canvas too long together: the largest --max-tokens that fits (n_ctx - 18 prompt tokens).
  r = run_dllm({"run", "--model", llada_path(), "--prompt", "What is 2+2?", "--max-tokens", "5000",
                "--block-length", "5000"});
  EXPECT_NE(r.err.find("--max-tokens " + std::to_string(n_ctx - 18) + " or less"), std::string::npos)
      << r.err;
}

TEST(CliHelp, EveryCommandHasHelp) {
  for (const char* cmd : {"run", "tokenize", "inspect", "logits", "pull"}) {
    const RunResult r = run_dllm({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find(std::string("dllm ") + cmd), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
    const RunResult h = run_dllm({"help", cmd});
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_EQ(h.out, r.out);
  }
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"help"}, {"-h"}}) {
    const RunResult r = run_dllm(args);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind("dllm: local inference", 0), 0u) << r.out;  // the root usage first
    EXPECT_NE(r.out.find("--max-tokens"), std::string::npos);         // then every command's usage
    EXPECT_NE(r.out.find("--tokens-file"), std::string::npos);
  }
  // Help wins over a bad flag elsewhere on the line.
  const RunResult r = run_dllm({"run", "--bogus", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(CliHelp, NoCommandIsAUsageError) {
  // As git and ollama: a missing command prints the usage on stderr and exits 2, never 0.
  const RunResult r = run_dllm({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("dllm: local inference", 0), 0u) << r.err;
  for (const char* cmd : {"run", "tokenize", "inspect", "logits", "pull", "help"}) {
    EXPECT_NE(r.err.find(std::string("\n  ") + cmd + " "), std::string::npos) << cmd << ": " << r.err;
  }
}

}  // namespace
}  // namespace dllm::test
