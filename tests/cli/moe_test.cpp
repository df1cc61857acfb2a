// The binary on the two tiny mixture-of-experts reference models (llama-quantize's Q4_K_M files of
// llama.cpp's llada-moe and rnd1 architectures, ../shared/reference): run, --json, tokenize, logits,
// inspect, and what --device gpu says. Random weights: the text is gibberish, the tests check
// properties, never words.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

std::string moe_path(const std::string& arch) {
  return reference("tiny-" + arch + "-q4km.gguf").string();
}

TEST(Moe, RunPrintsTextAndJsonNamesArchAndMix) {
  for (const std::string arch : {"llada-moe", "rnd1"}) {
    const RunResult r = run_dllm({"run", "--model", moe_path(arch), "What is 2+2?", "--max-tokens", "16",
                                  "--threads", "2", "--json", "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << arch << ": " << r.err;
    EXPECT_EQ(r.err.find("ERROR"), std::string::npos) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("arch"), arch);
    const std::string mix = j.at("quant_mix").get<std::string>();
    // llama-quantize's 8-expert rules: Q8_0 attn_k / attn_v, Q5_K attn_output.
    for (const char* t : {"F32", "Q4_K", "Q5_K", "Q6_K", "Q8_0"})
      EXPECT_NE(mix.find(t), std::string::npos) << mix;
    EXPECT_EQ(j.at("generated").size(), 16u);
    EXPECT_EQ(j.at("device"), "cpu");
    // LLaDA-MoE runs LLaDA's block loop, RND1 Dream's timestep loop (RND1's own sampler is entropy-based
    // on a timestep schedule).
    const std::string sampler = j.at("sampler").get<std::string>();
    EXPECT_EQ(sampler.rfind(arch == "rnd1" ? "dream:" : "llada:", 0), 0u) << sampler;
    // The plain run streams the same text.
    const RunResult plain = run_dllm({"run", "--model", moe_path(arch), "What is 2+2?", "--max-tokens", "16",
                                      "--threads", "2", "--seed", "3"});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, j.at("text").get<std::string>() + "\n");
  }
}

TEST(Moe, SameTextAtOneAndTwoThreads) {
  for (const std::string arch : {"llada-moe", "rnd1"}) {
    std::vector<std::string> outs;
    for (const char* threads : {"1", "2"}) {
      const RunResult r =
          run_dllm({"run", "--model", moe_path(arch), "Tell me a story.", "--max-tokens", "16",
                    "--temperature", "0.7", "--seed", "5", "--threads", threads, "--json"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      outs.push_back(json::parse(r.out).at("generated").dump());
    }
    EXPECT_EQ(outs[0], outs[1]) << arch;
  }
}

TEST(Moe, Rnd1IsABaseModelFedRawText) {
  const RunResult chat = run_dllm({"tokenize", "--model", moe_path("rnd1"), "--prompt", "What is 2+2?"});
  const RunResult raw =
      run_dllm({"tokenize", "--model", moe_path("rnd1"), "--prompt", "What is 2+2?", "--no-chat"});
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(chat.out, raw.out);
  EXPECT_NE(chat.err.find("note: rnd1 is a base model"), std::string::npos) << chat.err;
  EXPECT_EQ(raw.err.find("note:"), std::string::npos) << raw.err;
  // LLaDA-MoE keeps its file's template (the tiny file carries LLaDA's): more ids than the raw text.
  const RunResult moe = run_dllm({"tokenize", "--model", moe_path("llada-moe"), "--prompt", "What is 2+2?"});
  const RunResult moe_raw =
      run_dllm({"tokenize", "--model", moe_path("llada-moe"), "--prompt", "What is 2+2?", "--no-chat"});
  ASSERT_EQ(moe.exit_code, 0) << moe.err;
  EXPECT_GT(moe.out.size(), moe_raw.out.size());
}

// --verbose names the experts in the arch line, as ../shared/reference/README.md lists them for both
// tiny files (8 experts, 2 used, expert ffn 256), instead of the dense n_ff a MoE layer does not use.
TEST(Moe, VerboseArchLineNamesTheExperts) {
  for (const std::string arch : {"llada-moe", "rnd1"}) {
    const RunResult r = run_dllm({"run", "--model", moe_path(arch), "Hi", "--max-tokens", "8", "-v"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("arch: " + arch + " (4 layers, n_embd 256, "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(", 8 experts of n_ff 256, 2 used, vocab "), std::string::npos) << r.err;
  }
}

TEST(Moe, GpuSaysMoeRunsOnTheCpu) {
  for (const std::string arch : {"llada-moe", "rnd1"}) {
    const RunResult r =
        run_dllm({"run", "--model", moe_path(arch), "Hi", "--max-tokens", "8", "--device", "gpu"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    // The last stderr line (rnd1's base-model note may come before it), and the only ERROR.
    const std::string want =
        "ERROR: " + arch + ": MoE models run on the CPU only for now (run with --device cpu)\n";
    ASSERT_GE(r.err.size(), want.size()) << r.err;
    EXPECT_EQ(r.err.substr(r.err.size() - want.size()), want) << r.err;
    EXPECT_EQ(r.err.find("ERROR:"), r.err.size() - want.size()) << r.err;
    // --device auto picks the CPU without a word on stdout.
    const RunResult a =
        run_dllm({"run", "--model", moe_path(arch), "Hi", "--max-tokens", "8", "--device", "auto", "--json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(json::parse(a.out).at("device"), "cpu");
  }
}

TEST(Moe, InspectShowsTheExpertTensors) {
  const RunResult r = run_dllm({"inspect", moe_path("llada-moe")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("blk.0.ffn_gate_exps.weight  Q4_K    [256, 256, 8]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llada-moe.expert_used_count"), std::string::npos);
}

}  // namespace
}  // namespace dllm::test
