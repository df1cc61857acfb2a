// `dllm run --cache prefix|dual` and `--cfg-scale` end to end on the two reference models (random
// weights: the text is gibberish, so the tests check properties):
//  - both caches run with --threshold 0.9 on both models and fill the canvas;
//  - with one step per block the only forward of each block is the refresh, which is the full
//    forward: the answer must equal the uncached one token for token (Fast-dLLM's cache differs from
//    exact decoding only on the steps after a block's first);
//  - --cfg-scale runs on LLaDA and is a usage error (exit 2) for Dream; an unknown cache is exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

json run_json(const std::string& model, std::vector<std::string> extra) {
  std::vector<std::string> a = {"run",    "--model",   model, "--prompt", "Once upon a time",
                                "--json", "--threads", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  const RunResult r = run_dllm(a);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return json::object();
  return json::parse(r.out);
}

TEST(Cache, BothModelsRunWithThreshold) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string& model : {llada_path(), dream_path()}) {
    for (const std::string cache : {"prefix", "dual"}) {
      const json j = run_json(
          model, {"--max-tokens", "16", "--block-length", "8", "--threshold", "0.9", "--cache", cache});
      ASSERT_TRUE(j.contains("steps_run")) << model << " " << cache;
      EXPECT_GE(j.at("steps_run").get<int>(), 1);
      EXPECT_NE(j.at("sampler").get<std::string>().find("cache " + cache), std::string::npos);
    }
  }
}

TEST(Cache, OneStepPerBlockIsExact) {
  DLLM_REQUIRE_REFERENCE();
  // 16 tokens, blocks of 8, 2 steps: each block's single step is its refresh (a full forward).
  const std::vector<std::string> flags = {"--max-tokens", "16", "--block-length", "8",
                                          "--steps",      "2",  "--no-early-stop"};
  const json exact = run_json(llada_path(), flags);
  for (const std::string cache : {"prefix", "dual"}) {
    auto f = flags;
    f.insert(f.end(), {"--cache", cache});
    const json cached = run_json(llada_path(), f);
    EXPECT_EQ(cached.at("generated"), exact.at("generated")) << cache;
  }
}

TEST(Cfg, LladaRunsDreamIsAUsageError) {
  DLLM_REQUIRE_REFERENCE();
  const json j = run_json(llada_path(), {"--max-tokens", "8", "--cfg-scale", "1.5"});
  ASSERT_TRUE(j.contains("sampler"));
  EXPECT_NE(j.at("sampler").get<std::string>().find("cfg_scale 1.5"), std::string::npos);
  const RunResult d =
      run_dllm({"run", "--model", dream_path(), "--prompt", "x", "--max-tokens", "8", "--cfg-scale", "1"});
  EXPECT_EQ(d.exit_code, 2) << d.err;
  EXPECT_TRUE(is_one_error_line(d.err)) << d.err;
  const RunResult c = run_dllm({"run", "--model", llada_path(), "--prompt", "x", "--cache", "full"});
  EXPECT_EQ(c.exit_code, 2) << c.err;
}

}  // namespace
}  // namespace dllm::test
