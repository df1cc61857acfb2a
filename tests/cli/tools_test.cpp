// `dllm inspect`, `dllm tokenize` and `dllm logits` against the reference data in ../shared/reference:
// the prompt ids llama-diffusion-cli feeds for "What is 2+2?" and llama.cpp's logits for the same ids.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "quant/quant.h"
#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

json reference_json(const std::string& arch, const std::string& seq) {
  const std::vector<char> bytes = read_file(reference("logits/logits-tiny-" + arch + "-" + seq + ".json"));
  return json::parse(bytes.begin(), bytes.end());
}

std::string model_path(const std::string& arch) {
  return reference("tiny-" + arch + "-q4km.gguf").string();
}

TEST(Inspect, ListsMetadataTypesAndTensors) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string arch : {"llada", "dream"}) {
    const RunResult r = run_dllm({"inspect", model_path(arch)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& needle :
         std::vector<std::string>{"general.architecture", "\"" + arch + "\"", "blk.0.attn_q.weight",
                                  "token_embd.weight", "Q4_K", "Q6_K", "F32"}) {
      EXPECT_NE(r.out.find(needle), std::string::npos) << arch << ": " << needle;
    }
  }
}

// Keys, values and tensor names come from the file: a newline, an ESC sequence (clear screen, set the
// window title) or invalid UTF-8 in them is printed escaped, never raw, and each item stays one line.
TEST(Inspect, EscapesControlBytesAndInvalidUtf8) {
  TempDir dir;
  const std::string path = (dir / "hostile.gguf").string();
  gguf::GgufWriter w;
  w.add_string("general.architecture", "llada");
  w.add_u32("evil\nkey\x1b[2J", 1);
  w.add_string("x.value", "bad \xff\xfe utf8 \xc3 and \x1b]0;title\x07 \xc2\x9b");
  std::vector<float> f(8, 1.0f);
  w.add_tensor("w\x1b[31m\r", gguf::GgmlType::F32, {8}, f.data(), f.size() * 4);
  w.write(path);
  const RunResult r = run_dllm({"inspect", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (unsigned char c : r.out) ASSERT_TRUE(c == '\n' || (c >= 0x20 && c != 0x7f)) << "raw byte " << int(c);
  EXPECT_EQ(r.out.find("\xff"), std::string::npos);  // no raw invalid byte
  EXPECT_NE(r.out.find("\n  evil\\nkey\\x1b[2J   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"bad \\xff\\xfe utf8 \\xc3 and \\x1b]0;title\\x07 \\u009b\""), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("w\\x1b[31m\\r  F32"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("metadata: 3 keys\n"), std::string::npos) << r.out;
}

// ERROR lines quote names from the file (here the architecture): escaped, so still one line.
TEST(Inspect, ErrorLinesEscapeWhatTheyQuote) {
  TempDir dir;
  const std::string path = (dir / "arch.gguf").string();
  gguf::GgufWriter w;
  w.add_string("general.architecture", "evil\n\x1b[2Jarch");
  w.write(path);
  const RunResult r = run_dllm({"run", "--model", path, "--prompt", "Hi"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("unsupported model architecture: evil\\n\\x1b[2Jarch"), std::string::npos) << r.err;
}

TEST(Tokenize, IdsEqualTheReferencePromptPart) {
  DLLM_REQUIRE_REFERENCE();
  // Sequence (a) = the ids llama-diffusion-cli feeds for "What is 2+2?" followed by mask ids.
  for (const std::string arch : {"llada", "dream"}) {
    const json ref = reference_json(arch, "a");
    const int32_t mask = ref.at("mask_token_id").get<int32_t>();
    const std::vector<char> txt = read_file(reference("logits/tokens-tiny-" + arch + "-a.txt"));
    std::istringstream ids(std::string(txt.begin(), txt.end()));
    std::vector<int32_t> want;
    for (int32_t id; ids >> id && id != mask;) want.push_back(id);
    ASSERT_FALSE(want.empty());
    std::string want_line;
    for (size_t i = 0; i < want.size(); ++i) want_line += (i ? " " : "") + std::to_string(want[i]);
    const RunResult r = run_dllm({"tokenize", "--model", model_path(arch), "--prompt", "What is 2+2?"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, want_line + "\n") << arch;
    // run feeds the same ids (its --json lists them).
    const RunResult run = run_dllm(
        {"run", "--model", model_path(arch), "--prompt", "What is 2+2?", "--max-tokens", "8", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(json::parse(run.out).at("prompt_tokens").get<std::vector<int32_t>>(), want) << arch;
  }
}

/// ||a - b|| / ||b|| over one row.
double rel_rms(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

TEST(Logits, WritesRequestedRowsCloseToLlamaCpp) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string arch : {"llada", "dream"}) {
    const json ref = reference_json(arch, "a");
    const int64_t n_vocab = ref.at("n_vocab").get<int64_t>();
    const int64_t n_tokens = ref.at("n_tokens").get<int64_t>();
    const std::vector<int32_t> rows = {0, static_cast<int32_t>(n_tokens / 2),
                                       static_cast<int32_t>(n_tokens - 1)};
    TempDir dir;
    const std::string out_bin = (dir / "from-i32.f32").string();
    const std::string out_txt = (dir / "from-txt.f32").string();
    const std::string rows_arg =
        std::to_string(rows[0]) + " " + std::to_string(rows[1]) + " " + std::to_string(rows[2]);
    RunResult r = run_dllm({"logits", "--model", model_path(arch), "--tokens-file",
                            reference("logits/tokens-tiny-" + arch + "-a.i32").string(), "--rows", rows_arg,
                            "--out", out_bin, "--threads", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    r = run_dllm({"logits", "--model", model_path(arch), "--tokens-file",
                  reference("logits/tokens-tiny-" + arch + "-a.txt").string(), "--rows", rows_arg, "--out",
                  out_txt, "--threads", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;

    const std::vector<char> ours = read_file(out_bin);
    ASSERT_EQ(ours.size(), rows.size() * static_cast<size_t>(n_vocab) * sizeof(float)) << arch;
    EXPECT_EQ(read_file(out_txt), ours) << "text and .i32 token files, 1 and 2 threads: same bytes";

    // llama.cpp's logits (float16 copy), rows picked by --rows.
    const std::vector<char> ref_bytes = read_file(reference("logits/logits-tiny-" + arch + "-a.f16"));
    ASSERT_EQ(ref_bytes.size(), static_cast<size_t>(n_tokens * n_vocab) * 2);
    const float* got = reinterpret_cast<const float*>(ours.data());
    for (size_t j = 0; j < rows.size(); ++j) {
      std::vector<float> want(n_vocab);
      const auto* h = reinterpret_cast<const uint16_t*>(ref_bytes.data()) + rows[j] * n_vocab;
      for (int64_t v = 0; v < n_vocab; ++v) want[v] = quant::fp16_to_fp32(h[v]);
      // Issue 2's bound per row (llama.cpp itself moves 2.5-3.4% with its flash-attention switch).
      EXPECT_LE(rel_rms(got + j * n_vocab, want.data(), n_vocab), 0.05) << arch << " row " << rows[j];
    }
  }
}

TEST(Logits, RejectsBadInput) {
  DLLM_REQUIRE_REFERENCE();
  TempDir dir;
  const std::string out = (dir / "x.f32").string();
  const std::string model = model_path("llada");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
  };
  const std::vector<Case> cases = {
      {{"logits", "--model", model, "--out", out}, 2},                       // no tokens
      {{"logits", "--model", model, "--tokens", "1 x 3", "--out", out}, 2},  // not a number
      {{"logits", "--model", model, "--tokens", "1 2 3", "--rows", "3", "--out", out},
       2},                                                                        // row past the end
      {{"logits", "--model", model, "--tokens", "1 99999999", "--out", out}, 2},  // id past the vocab
      {{"logits", "--model", model, "--tokens-file", "/nonexistent.i32", "--out", out}, 1},
      {{"logits", "--model", model, "--tokens", "1 2", "--out", "/nonexistent-dir/x.f32"}, 1},
  };
  for (const Case& c : cases) {
    const RunResult r = run_dllm(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  }
}

}  // namespace
}  // namespace dllm::test
