// `dllm run` end to end on the two reference models: exit codes, stdout discipline, the --json object,
// reproducibility (same seed -> same text at 1 and 2 threads), early stop not changing the answer,
// empty prompts, --verbose and --trace. The models have random weights: the text is gibberish, so the
// tests check properties, never particular words.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

std::vector<std::string> run_args(const std::string& model, const std::string& prompt,
                                  std::vector<std::string> extra) {
  std::vector<std::string> a = {"run", "--model", model, "--prompt", prompt};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

json parse_one_json_line(const RunResult& r) {
  EXPECT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "--json prints exactly one line";
  return json::parse(r.out);  // throws (test error) when invalid
}

TEST(Run, BothReferenceModelsPrintText) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string& model : {llada_path(), dream_path()}) {
    const RunResult r = run_dllm(run_args(model, "What is 2+2?", {"--max-tokens", "16", "--threads", "2"}));
    EXPECT_EQ(r.exit_code, 0) << model << ": " << r.err;
    EXPECT_EQ(r.err.find("ERROR"), std::string::npos) << r.err;
    ASSERT_FALSE(r.out.empty()) << model;
    EXPECT_EQ(r.out.back(), '\n');
  }
}

TEST(Run, JsonObjectHasTheFields) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string& model : {llada_path(), dream_path()}) {
    const RunResult r =
        run_dllm(run_args(model, "What is 2+2?", {"--max-tokens", "16", "--json", "--seed", "3"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = parse_one_json_line(r);
    ASSERT_TRUE(j.at("text").is_string());
    ASSERT_TRUE(j.at("tokens").is_array());
    for (const auto& t : j.at("tokens")) EXPECT_TRUE(t.is_number_integer());
    EXPECT_EQ(j.at("generated").size(), 16u);
    EXPECT_LE(j.at("tokens").size(), 16u);
    const int64_t steps_run = j.at("steps_run").get<int64_t>();
    EXPECT_GE(steps_run, 1);
    EXPECT_LE(steps_run, 16);
    EXPECT_TRUE(j.at("stopped_early").is_boolean());
    const json& t = j.at("timings");
    EXPECT_EQ(t.at("step_ms").size(), static_cast<size_t>(steps_run));
    EXPECT_EQ(t.at("forward_ms").size(), static_cast<size_t>(steps_run));
    EXPECT_GT(t.at("load_ms").get<double>(), 0.0);
    EXPECT_GE(t.at("total_ms").get<double>(), t.at("generate_ms").get<double>());
    EXPECT_GT(j.at("peak_rss_bytes").get<uint64_t>(), 1u << 20);
    EXPECT_GT(j.at("n_prompt_tokens").get<int64_t>(), 0);

    // The plain run streams the same text (plus one newline) for the same seed.
    const RunResult plain = run_dllm(run_args(model, "What is 2+2?", {"--max-tokens", "16", "--seed", "3"}));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.out, j.at("text").get<std::string>() + "\n");
  }
}

TEST(Run, SameSeedSameTextAtOneAndTwoThreads) {
  DLLM_REQUIRE_REFERENCE();
  // Temperature > 0 so the seed matters (LLaDA: Gumbel noise; Dream: categorical sampling + top-p).
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {llada_path(), {"--max-tokens", "16", "--temperature", "0.8", "--seed", "7"}},
      {dream_path(), {"--max-tokens", "8", "--temperature", "0.6", "--top-p", "0.95", "--seed", "7"}},
  };
  for (const auto& [model, flags] : cases) {
    std::vector<std::string> outs;
    for (const char* threads : {"1", "1", "2"}) {
      std::vector<std::string> f = flags;
      f.insert(f.end(), {"--threads", threads, "--json"});
      const RunResult r = run_dllm(run_args(model, "Tell me a story.", f));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const json j = parse_one_json_line(r);
      outs.push_back(j.at("generated").dump() + j.at("text").dump());
    }
    EXPECT_EQ(outs[0], outs[1]) << model << ": same seed, same threads";
    EXPECT_EQ(outs[0], outs[2]) << model << ": same seed, 1 vs 2 threads";
  }
}

TEST(Run, EarlyStopDoesNotChangeTheAnswer) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string& model : {llada_path(), dream_path()}) {
    const std::vector<std::string> flags = {"--max-tokens", "16", "--json", "--seed", "1"};
    RunResult early = run_dllm(run_args(model, "Hi", flags));
    std::vector<std::string> f2 = flags;
    f2.push_back("--no-early-stop");
    RunResult full = run_dllm(run_args(model, "Hi", f2));
    ASSERT_EQ(early.exit_code, 0) << early.err;
    ASSERT_EQ(full.exit_code, 0) << full.err;
    const json je = parse_one_json_line(early), jf = parse_one_json_line(full);
    EXPECT_EQ(je.at("text"), jf.at("text")) << model;
    EXPECT_EQ(je.at("tokens"), jf.at("tokens")) << model;
    EXPECT_FALSE(jf.at("stopped_early").get<bool>());
    EXPECT_EQ(jf.at("steps_run"), jf.at("steps_planned"));
    EXPECT_LE(je.at("steps_run").get<int64_t>(), jf.at("steps_run").get<int64_t>());
    if (je.at("stopped_early").get<bool>()) {
      EXPECT_LT(je.at("steps_run").get<int64_t>(), jf.at("steps_run").get<int64_t>());
    }
  }
}

TEST(Run, EmptyPromptWorks) {
  DLLM_REQUIRE_REFERENCE();
  for (const std::string& model : {llada_path(), dream_path()}) {
    for (bool chat : {true, false}) {
      std::vector<std::string> f = {"--max-tokens", "8"};
      if (!chat) f.push_back("--no-chat");
      const RunResult r = run_dllm(run_args(model, "", f));
      EXPECT_EQ(r.exit_code, 0) << model << (chat ? "" : " --no-chat") << ": " << r.err;
      EXPECT_FALSE(r.out.empty());
    }
  }
}

TEST(Run, PositionalPromptEqualsFlag) {
  DLLM_REQUIRE_REFERENCE();
  const RunResult a = run_dllm({"run", "--model", llada_path(), "What is 2+2?", "--max-tokens", "8"});
  const RunResult b =
      run_dllm({"run", "--model", llada_path(), "--prompt", "What is 2+2?", "--max-tokens", "8"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Run, VerboseGoesToStderrOnly) {
  DLLM_REQUIRE_REFERENCE();
  const auto args = run_args(llada_path(), "Hi", {"--max-tokens", "8"});
  RunResult quiet = run_dllm(args);
  auto vargs = args;
  vargs.push_back("--verbose");
  RunResult verbose = run_dllm(vargs);
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  EXPECT_EQ(quiet.out, verbose.out);
  for (const char* needle : {"model:", "arch: llada", "quantization:", "Q4_K",
                             "threads:", "prompt:", "canvas:", "load:", "step 0:", "total:", "peak RSS:"}) {
    EXPECT_NE(verbose.err.find(needle), std::string::npos) << needle << " missing in:\n" << verbose.err;
  }
}

TEST(Run, TraceWritesOneLinePerStep) {
  DLLM_REQUIRE_REFERENCE();
  TempDir dir;
  const std::string trace = (dir / "trace.jsonl").string();
  const RunResult r =
      run_dllm(run_args(llada_path(), "Hi", {"--max-tokens", "8", "--json", "--trace", trace}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse_one_json_line(r);
  const std::vector<char> bytes = read_file(trace);
  std::istringstream lines(std::string(bytes.begin(), bytes.end()));
  std::string line;
  int64_t n = 0;
  while (std::getline(lines, line)) {
    const json step = json::parse(line);
    EXPECT_EQ(step.at("step").get<int64_t>(), n);
    ++n;
  }
  EXPECT_EQ(n, j.at("steps_run").get<int64_t>());
}

// Issue 5's trace check through the binary: LLaDA generate.py with gen_length 64, block_length 32,
// steps 16 gives 8 steps per block and get_num_transfer_tokens = 32 / 8 = 4 commits per step, blocks 0
// then 1. At 4 per step no parallel-decoding warning; at steps 8 (8 per step) there is one.
TEST(Run, LladaTraceSixtyFourTokensBlockThirtyTwoSixteenSteps) {
  DLLM_REQUIRE_REFERENCE();
  TempDir dir;
  const std::string trace = (dir / "trace.jsonl").string();
  const RunResult r = run_dllm(run_args(
      llada_path(), "Hi",
      {"--max-tokens", "64", "--block-length", "32", "--steps", "16", "--no-early-stop", "--trace", trace}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("tokens are committed per step"), std::string::npos) << r.err;
  const std::vector<char> bytes = read_file(trace);
  std::istringstream lines(std::string(bytes.begin(), bytes.end()));
  std::string line;
  int64_t n = 0, masks = 64;
  while (std::getline(lines, line)) {
    const json step = json::parse(line);
    EXPECT_EQ(step.at("step").get<int64_t>(), n);
    EXPECT_EQ(step.at("block").get<int64_t>(), n / 8) << line;
    EXPECT_EQ(step.at("positions").size(), 4u) << line;
    masks -= 4;
    EXPECT_EQ(step.at("masks_left").get<int64_t>(), masks) << line;
    ++n;
  }
  EXPECT_EQ(n, 16);

  const RunResult fast =
      run_dllm(run_args(llada_path(), "Hi", {"--max-tokens", "64", "--block-length", "32", "--steps", "8"}));
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_NE(fast.err.find("8 tokens are committed per step"), std::string::npos) << fast.err;
}

/// Forward passes of Dream's top-k schedule worked out from the reference (Dream generation_utils.py
/// _sample), in f64: timesteps = linspace(1, eps, steps + 1); step i reveals int(masks * (1 - s/t))
/// (t, s = timesteps[i], timesteps[i+1]), everything left on the last step; a step revealing 0 tokens
/// changes nothing.
int64_t dream_forward_passes(int64_t max_tokens, int64_t steps, double eps) {
  int64_t left = max_tokens, passes = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const double t = 1.0 + (eps - 1.0) * static_cast<double>(i) / static_cast<double>(steps);
    const double s = 1.0 + (eps - 1.0) * static_cast<double>(i + 1) / static_cast<double>(steps);
    const int64_t k = i < steps - 1 ? static_cast<int64_t>(static_cast<double>(left) * (1.0 - s / t)) : left;
    if (k > 0) ++passes;
    left -= k;
  }
  return passes;
}

/// The lines of `err` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& err, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

TEST(Run, DreamNotesTheStepsItsScheduleSkips) {
  DLLM_REQUIRE_REFERENCE();
  // -n 16 with the default steps = 16: int(16 * (1 - s/t)) at step 0 is int(0.999) = 0.
  const int64_t passes = dream_forward_passes(16, 16, 1e-3);
  ASSERT_EQ(passes, 15);
  const RunResult r = run_dllm(run_args(dream_path(), "Hi", {"-n", "16", "--json", "--no-early-stop"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse_one_json_line(r);
  EXPECT_EQ(j.at("steps_planned").get<int64_t>(), passes);
  EXPECT_EQ(j.at("steps_run").get<int64_t>(), passes);
  const auto notes = lines_starting(r.err, "note: ");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  EXPECT_NE(notes[0].find("15 forward passes for 16 steps"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("0 at step 0"), std::string::npos) << notes[0];
}

TEST(Run, LladaNotesStepsBeyondTheBlockLength) {
  DLLM_REQUIRE_REFERENCE();
  // get_num_transfer_tokens(8 masks, 16 steps): 1 token on the first 8 steps, 0 on the last 8.
  const RunResult r = run_dllm(run_args(llada_path(), "Hi", {"-n", "8", "--steps", "16", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_one_json_line(r).at("steps_planned").get<int64_t>(), 8);
  const auto notes = lines_starting(r.err, "note: ");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  EXPECT_NE(notes[0].find("8 forward passes for 16 steps (--steps)"), std::string::npos) << notes[0];
}

TEST(Run, NoStepNoteWhenEveryStepRuns) {
  DLLM_REQUIRE_REFERENCE();
  ASSERT_GT(dream_forward_passes(64, 16, 1e-3), 15);  // 64 * (1 - s/t) >= 3 on every step
  for (const auto& args :
       std::vector<std::vector<std::string>>{run_args(llada_path(), "Hi", {"-n", "16"}),
                                             run_args(dream_path(), "Hi", {"-n", "64", "-s", "16"})}) {
    const RunResult r = run_dllm(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(lines_starting(r.err, "note: ").empty()) << r.err;
  }
}

TEST(Run, ThreadsAboveTheCpusWarnOnce) {
  DLLM_REQUIRE_REFERENCE();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int cpus = CPU_COUNT(&set);
  const std::string t = std::to_string(cpus + 1);
  const RunResult r = run_dllm(run_args(llada_path(), "Hi", {"-n", "8", "--threads", t, "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto warnings = lines_starting(r.err, "warning: --threads");
  ASSERT_EQ(warnings.size(), 1u) << r.err;
  EXPECT_NE(
      warnings[0].find("--threads " + t + " is more than the " + std::to_string(cpus) + " logical CPUs"),
      std::string::npos)
      << warnings[0];
  EXPECT_EQ(parse_one_json_line(r).at("threads").get<int>(), cpus + 1);
  // logits too (one forward pass, one warning line).
  TempDir dir;
  const RunResult l = run_dllm({"logits", "--model", llada_path(), "--tokens", "1 2", "--out",
                                (dir / "l.f32").string(), "--threads", t});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(lines_starting(l.err, "warning: --threads").size(), 1u) << l.err;
  // At the CPU count: no warning.
  const RunResult ok = run_dllm(run_args(llada_path(), "Hi", {"-n", "8", "--threads", std::to_string(cpus)}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_TRUE(lines_starting(ok.err, "warning: --threads").empty()) << ok.err;
}

TEST(Run, OpenMpWorkersSleepUnlessTheUserChose) {
  DLLM_REQUIRE_REFERENCE();
  // main() re-executes itself with OMP_WAIT_POLICY=passive when neither variable is set (libgomp
  // reads them before main); --verbose prints what the process that ran the model saw.
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT"))
    GTEST_SKIP() << "OMP_WAIT_POLICY or GOMP_SPINCOUNT is set in the test's environment";
  const auto args = run_args(llada_path(), "Hi", {"-n", "8", "-v"});
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "OpenMP idle wait: OMP_WAIT_POLICY=passive)"},
      {{"OMP_WAIT_POLICY=active"}, "OpenMP idle wait: OMP_WAIT_POLICY=active)"},
      {{"GOMP_SPINCOUNT=1000"}, "OpenMP idle wait: GOMP_SPINCOUNT=1000)"},
  };
  for (const auto& [env, want] : cases) {
    const RunResult r = run_dllm(args, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << want << " missing in:\n" << r.err;
  }
}

}  // namespace
}  // namespace dllm::test
