// What the binary decides when a flag is not given, and the small things a user expects of it: the
// default model (the bundled demo model while the Hugging Face cache lacks LLaDA-8B, for run and
// tokenize alike), --device auto, OMP_NUM_THREADS, --version, doctor's report and setup's model step,
// the warning above --temperature 10, and what the binary says of the launcher's own `test`. Every
// run gets an empty Hugging Face cache and offline mode, so nothing is downloaded and the default is
// the demo model (models/, no ../shared needed except where a test says so).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_binary.h"

namespace dllm::test {
namespace {

using nlohmann::json;

std::string demo_path() {
  return std::string(DLLM_SOURCE_DIR) + "/models/tiny-llada-fairytales-q4km.gguf";
}

/// An empty Hugging Face cache, offline, no $DLLM_MODEL (nor OMP_NUM_THREADS, DLLM_CPU_ISA): the default
/// model is the demo model.
class EmptyCache : public ::testing::Test {
 protected:
  RunResult dllm(const std::vector<std::string>& args, std::vector<std::string> env = {}) const {
    std::vector<std::string> all = {"HF_HUB_CACHE=" + (dir_ / "hub").string(),
                                    "XDG_CACHE_HOME=" + (dir_ / "xdg").string(),
                                    "HF_HUB_OFFLINE=1",
                                    "DLLM_MODEL",
                                    "OMP_NUM_THREADS",
                                    "DLLM_CPU_ISA"};
    all.insert(all.end(), env.begin(), env.end());
    return run_dllm(args, all);
  }
  TempDir dir_;
};

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    start = end + 1;
  }
  return out;
}

TEST(CliDefaults, VersionNamesTheVersionCommitCpuPathAndCuda) {
  const RunResult r = run_dllm({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(r.out.rfind("dllm ", 0), 0u) << r.out;
  const std::string first = r.out.substr(0, r.out.find('\n'));
  const size_t at = first.find(" (commit ");
  ASSERT_NE(at, std::string::npos) << first;
  const std::string commit = first.substr(at + 9, first.size() - at - 10);  // up to the ')'
  EXPECT_TRUE(commit == "unknown" ||
              (commit.size() >= 12 && commit.find_first_not_of("0123456789abcdef") >= 12))
      << first;
  EXPECT_EQ(lines_starting(r.out, "cpu: ").size(), 1u) << r.out;
  const auto cuda = lines_starting(r.out, "cuda: ");
  ASSERT_EQ(cuda.size(), 1u) << r.out;
  EXPECT_TRUE(cuda[0].find("not built") != std::string::npos ||
              cuda[0].find("built for ") != std::string::npos)
      << cuda[0];
}

// --version's CPU line is the path `run` takes without --isa: the one $DLLM_CPU_ISA names (scalar
// runs everywhere), and for a name run refuses, that refusal, with --version still exiting 0.
TEST(CliDefaults, VersionsCpuLineFollowsDllmCpuIsa) {
  const RunResult scalar = run_dllm({"--version"}, {"DLLM_CPU_ISA=scalar"});
  EXPECT_EQ(scalar.exit_code, 0) << scalar.err;
  const auto line = lines_starting(scalar.out, "cpu: ");
  ASSERT_EQ(line.size(), 1u) << scalar.out;
  EXPECT_EQ(line[0].rfind("cpu: scalar (", 0), 0u) << line[0];
  EXPECT_NE(line[0].find("[DLLM_CPU_ISA=scalar]"), std::string::npos) << line[0];

  const RunResult bogus = run_dllm({"--version"}, {"DLLM_CPU_ISA=bogus"});
  EXPECT_EQ(bogus.exit_code, 0) << bogus.err;
  const auto refused = lines_starting(bogus.out, "cpu: ");
  ASSERT_EQ(refused.size(), 1u) << bogus.out;
  EXPECT_NE(refused[0].find("unknown ISA 'bogus'"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("(run refuses it)"), std::string::npos) << refused[0];
}

TEST_F(EmptyCache, RunWithoutModelUsesTheDemoModelAndSaysSoOnce) {
  const RunResult r = dllm({"run", "Once upon a time", "-n", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("model").get<std::string>(), demo_path());
  const auto notes = lines_starting(r.err, "note: no --model given");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  EXPECT_NE(notes[0].find("models/tiny-llada-fairytales-q4km.gguf"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("./dllm pull"), std::string::npos) << notes[0];
}

TEST_F(EmptyCache, TokenizeWithoutModelUsesRunsDefault) {
  const RunResult def = dllm({"tokenize", "Once upon a time"});
  const RunResult demo = dllm({"tokenize", "--model", demo_path(), "Once upon a time"});
  ASSERT_EQ(def.exit_code, 0) << def.err;
  ASSERT_EQ(demo.exit_code, 0) << demo.err;
  EXPECT_EQ(def.out, demo.out);
  EXPECT_EQ(lines_starting(def.err, "note: no --model given").size(), 1u) << def.err;
}

TEST_F(EmptyCache, DllmModelOverridesTheDefault) {
  const RunResult r = dllm({"run", "Hi", "-n", "8", "--json"}, {"DLLM_MODEL=" + demo_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("model").get<std::string>(), demo_path());
  EXPECT_NE(r.err.find("($DLLM_MODEL)"), std::string::npos) << r.err;
}

TEST_F(EmptyCache, PullWithoutSpecFetchesTheDefaultModel) {
  const RunResult r = dllm({"pull"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("mradermacher/LLaDA-8B-Instruct-GGUF:Q4_K_M is not in the Hugging Face cache"),
            std::string::npos)
      << r.err;
}

TEST_F(EmptyCache, DeviceDefaultsToAutoAndAnIsaChoiceMeansTheCpu) {
  const RunResult v = dllm({"run", "--model", demo_path(), "Hi", "-n", "8", "--verbose"});
  ASSERT_EQ(v.exit_code, 0) << v.err;
  // auto either found a GPU (its device line) or says why it did not (no GPU, no driver, no CUDA build).
  EXPECT_TRUE(v.err.find("(--device auto: no GPU: ") != std::string::npos ||
              v.err.find("(--device auto chose the CPU: ") != std::string::npos ||
              v.err.find("device: gpu (") != std::string::npos)
      << v.err;
  const RunResult h = dllm({"run", "--help"});
  EXPECT_NE(h.out.find("--device TEXT:{cpu,gpu,auto}=auto"), std::string::npos) << h.out;
  // --isa or $DLLM_CPU_ISA chose CPU kernels: auto runs them, on any machine.
  using Case = std::pair<std::vector<std::string>, std::vector<std::string>>;  // flags, environment
  for (const auto& [flags, env] :
       std::vector<Case>{{{"--isa", "scalar"}, {}}, {{}, {"DLLM_CPU_ISA=scalar"}}}) {
    std::vector<std::string> args = {"run", "--model", demo_path(), "Hi", "-n", "8", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    const RunResult r = dllm(args, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("device"), "cpu") << r.out;
    EXPECT_EQ(j.at("isa"), "scalar") << r.out;
  }
}

TEST_F(EmptyCache, OmpNumThreadsSetsTheThreadCountUnlessThreadsIsGiven) {
  auto threads = [&](std::vector<std::string> extra, std::vector<std::string> env, std::string* err) {
    std::vector<std::string> args = {"run", "--model", demo_path(), "Hi", "-n",
                                     "8",   "--json",  "--device",  "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = dllm(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (err) *err = r.err;
    return r.exit_code == 0 ? json::parse(r.out).at("threads").get<int>() : -1;
  };
  const int automatic = threads({}, {}, nullptr);
  ASSERT_GE(automatic, 1);
  const int want = automatic == 1 ? 2 : 1;  // within 4 x the logical CPUs on any machine
  const std::string w = std::to_string(want);
  EXPECT_EQ(threads({}, {"OMP_NUM_THREADS=" + w}, nullptr), want);
  EXPECT_EQ(threads({}, {"OMP_NUM_THREADS=" + w + ",1"}, nullptr), want) << "the first level of the list";
  EXPECT_EQ(threads({"--threads", std::to_string(automatic)}, {"OMP_NUM_THREADS=" + w}, nullptr), automatic)
      << "--threads wins";
  std::string err;
  EXPECT_EQ(threads({}, {"OMP_NUM_THREADS=many"}, &err), automatic);
  EXPECT_EQ(lines_starting(err, "warning: OMP_NUM_THREADS=many is not a thread count").size(), 1u) << err;
  // Said once, in our words: libgomp never sees the value (main.cpp hides it before libgomp starts).
  EXPECT_EQ(err.find("libgomp"), std::string::npos) << err;
}

// A flag given twice takes its last value, as llama.cpp's tools do (`-n 8 -n 16` is 16).
TEST_F(EmptyCache, RepeatedFlagTakesTheLastValue) {
  const RunResult r = dllm({"run", "--model", demo_path(), "Hi", "-n", "8", "-n", "16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("max_tokens"), 16);
}

// A mask token typed into the prompt is parsed as the control token: a note says it is not denoised,
// and --no-special keeps it as text (no note).
TEST_F(EmptyCache, TypedMaskTokenGetsANote) {
  const RunResult r = dllm({"run", "--model", demo_path(), "Hi <|mdm_mask|> there", "-n", "8", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto notes = lines_starting(r.err, "note: the prompt holds the mask token <|mdm_mask|>");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  EXPECT_NE(notes[0].find("not denoised"), std::string::npos) << notes[0];
  const RunResult plain =
      dllm({"run", "--model", demo_path(), "Hi <|mdm_mask|> there", "-n", "8", "--json", "--no-special"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(lines_starting(plain.err, "note: the prompt holds the mask token").empty()) << plain.err;
}

TEST_F(EmptyCache, TemperatureAboveTenWarns) {
  for (const char* t : {"10", "11"}) {
    const RunResult r = dllm({"run", "--model", demo_path(), "Hi", "-n", "8", "--temperature", t, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto warned = lines_starting(r.err, "warning: --temperature");
    const json w = json::parse(r.out).at("warnings");
    if (std::string(t) == "10") {
      EXPECT_TRUE(warned.empty()) << r.err;
    } else {
      ASSERT_EQ(warned.size(), 1u) << r.err;
      EXPECT_NE(warned[0].find("--temperature 11 is above 10"), std::string::npos) << warned[0];
      EXPECT_NE(warned[0].find("degenerate"), std::string::npos) << warned[0];
      EXPECT_EQ(w.size(), 1u) << w.dump();
    }
  }
}

TEST_F(EmptyCache, DoctorReportsTheMachineAndAPromptThatSuitsTheModel) {
  const RunResult r = dllm({"doctor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* prefix : {"build: dllm ", "cpu: ", "memory: ", "gpu: ",
                             "models: none in the Hugging Face cache", "default model: "}) {
    EXPECT_EQ(lines_starting(r.out, prefix).size(), 1u) << prefix << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("(fix: ./dllm pull"), std::string::npos) << r.out;
  // The demo model has no chat template: a story opening, not a question.
  EXPECT_EQ(lines_starting(r.out, "try: ").back(), "try: ./dllm run \"Once upon a time\"") << r.out;
  const RunResult m = dllm({"doctor", "--model", demo_path()});
  EXPECT_EQ(lines_starting(m.out, "try: ").back(),
            "try: ./dllm run --model " + demo_path() + " \"Once upon a time\"")
      << m.out;
}

// doctor's CPU line names the kernels run will use, $DLLM_CPU_ISA's when it is set, and says when
// run would refuse the variable.
TEST_F(EmptyCache, DoctorsCpuLineFollowsDllmCpuIsa) {
  const RunResult scalar = dllm({"doctor"}, {"DLLM_CPU_ISA=scalar"});
  ASSERT_EQ(scalar.exit_code, 0) << scalar.err;
  const auto line = lines_starting(scalar.out, "cpu: ");
  ASSERT_EQ(line.size(), 1u) << scalar.out;
  EXPECT_NE(line[0].find("run uses the scalar kernels ($DLLM_CPU_ISA)"), std::string::npos) << line[0];
  const RunResult bogus = dllm({"doctor"}, {"DLLM_CPU_ISA=bogus"});
  ASSERT_EQ(bogus.exit_code, 0) << bogus.err;
  const auto refused = lines_starting(bogus.out, "cpu: ");
  ASSERT_EQ(refused.size(), 1u) << bogus.out;
  EXPECT_NE(refused[0].find("run refuses environment variable DLLM_CPU_ISA: unknown ISA 'bogus'"),
            std::string::npos)
      << refused[0];
}

TEST_F(EmptyCache, DoctorSuggestsAQuestionForAChatModel) {
  DLLM_REQUIRE_REFERENCE();
  const RunResult r = dllm({"doctor", "--model", llada_path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.out, "try: ").back(),
            "try: ./dllm run --model " + llada_path() + " \"What is 2+2?\"")
      << r.out;
}

TEST_F(EmptyCache, SetupChecksTheModelAndEndsWithATryLine) {
  // No terminal, nothing cached, no --yes: nothing is downloaded, exit 3 and the finishing command.
  const RunResult ask = dllm({"setup"});
  EXPECT_EQ(ask.exit_code, 3) << ask.err;
  EXPECT_NE(ask.err.find("finish the job with: ./dllm setup --yes"), std::string::npos) << ask.err;
  const RunResult none = dllm({"setup", "--no-model"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(lines_starting(none.out, "try: ").back(), "try: ./dllm run \"Once upon a time\"") << none.out;
  const RunResult local = dllm({"setup", "--model", demo_path()});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(lines_starting(local.err, "dllm: check: generated 16 tokens in ").size(), 1u) << local.err;
  EXPECT_EQ(lines_starting(local.out, "try: ").back(),
            "try: ./dllm run --model " + demo_path() + " \"Once upon a time\"")
      << local.out;
}

TEST(CliDefaults, TheLaunchersTestCommandIsNamedAndSuggested) {
  const RunResult r = run_dllm({"test"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(is_one_error_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("run ./dllm test"), std::string::npos) << r.err;
  for (const auto& [typo, want] : std::vector<std::pair<std::string, std::string>>{
           {"tset", "test"}, {"setpu", "setup"}, {"doctr", "doctor"}}) {
    const RunResult t = run_dllm({typo});
    EXPECT_EQ(t.exit_code, 2) << typo;
    EXPECT_NE(t.err.find("did you mean '" + want + "'"), std::string::npos) << t.err;
  }
}

}  // namespace
}  // namespace dllm::test
