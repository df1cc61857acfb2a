// Engine throughput: committed tokens/s of C concurrent jobs stepped together by one engine against
// the same jobs run one after another through the same engine (each submitted when the previous one
// ended: what C `dllm run` calls in a row compute, without their process starts and model loads),
// for C = 1, 2, 4, 8, with the exact canvas and with the dual cache. One engine (parallel = the
// largest C) serves both arms, so they share the backend and its prepared weights.
// The two arms alternate inside every repetition (batched then sequential for each C and cache), so
// a change in the machine's load touches both; the file quotes medians over the repetitions.
//
//   engine_bench [--model GGUF] [--threads N] [--reps R] [--steps S] [--concurrency 1,2,4,8]
//                [--caches none,dual] [--out FILE]
//
// Defaults: the tiny LLaDA reference model (../shared/reference/tiny-llada-q4km.gguf), 2 threads,
// 3 repetitions, max_tokens 64, block 32, 16 steps, temperature 0, no early stop (every job commits
// all 64 tokens), prompts from bench/eval/fairytale-prompts.txt. Writes
// bench/results/engine-<model>-t<threads>-<UTC time>.json unless --out says otherwise.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench_util.h"
#include "diffusion/sampler.h"
#include "engine/engine.h"
#include "engine/sampler_options.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace dllm;
using Clock = std::chrono::steady_clock;

std::string utc_now(const char* format) {
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, format, std::gmtime(&now));
  return buf;
}

/// Same fields as bench/e2e_bench.py's machine(): host, cpu, logical_cpus, isa_flags, kernel.
nlohmann::json machine() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  std::string cpu, flags;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    const auto value = [&] { return line.substr(line.find(':') + 2); };
    if (cpu.empty() && line.rfind("model name", 0) == 0) cpu = value();
    // Appended, not " " + value(): GCC 12 warns (-Wrestrict) on that operator+ though it is correct.
    if (flags.empty() && line.rfind("flags", 0) == 0) flags.append(" ").append(value()).append(" ");
  }
  nlohmann::json isa = nlohmann::json::array();
  for (const char* f : {"avx2", "avx_vnni", "avx512f", "avx512_vnni"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) isa.push_back(f);
  utsname u{};
  uname(&u);
  std::vector<double> load(3, 0.0);
  std::ifstream la("/proc/loadavg");
  la >> load[0] >> load[1] >> load[2];
  return {{"host", host},     {"cpu", cpu},          {"logical_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
          {"isa_flags", isa}, {"kernel", u.release}, {"load_avg_at_start", load}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = bench::repo_root();
  std::string model_path = (root / ".." / "shared" / "reference" / "tiny-llada-q4km.gguf").string();
  std::string out;
  int threads = 2, reps = 3;
  int64_t steps = 16;
  std::vector<int> concurrency{1, 2, 4, 8};
  std::vector<std::string> caches{"none", "dual"};
  auto split = [](const std::string& v) {
    std::vector<std::string> out;
    for (size_t b = 0, e; b <= v.size(); b = e + 1) {
      e = v.find(',', b);
      if (e == std::string::npos) e = v.size();
      if (e > b) out.push_back(v.substr(b, e - b));
    }
    return out;
  };
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model")
      model_path = v;
    else if (a == "--threads")
      threads = std::stoi(v);
    else if (a == "--reps")
      reps = std::stoi(v);
    else if (a == "--steps")
      steps = std::stoll(v);
    else if (a == "--out")
      out = v;
    else if (a == "--caches")
      caches = split(v);
    else if (a == "--concurrency") {
      concurrency.clear();
      for (const std::string& c : split(v)) concurrency.push_back(std::stoi(c));
    } else {
      std::fprintf(stderr, "engine_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  try {
    const gguf::GgufFile file = gguf::GgufFile::open(model_path);
    const model::Model model = model::Model::load(file);
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(file);
    std::vector<std::vector<int32_t>> prompts;
    std::ifstream pf(root / "bench" / "eval" / "fairytale-prompts.txt");
    for (std::string line; std::getline(pf, line) && prompts.size() < 8;) {
      if (line.empty()) continue;
      tokenizer::ChatOptions c;
      c.prompt = line;
      prompts.push_back(tokenizer::prompt_tokens(tok, c));
    }
    if (prompts.empty()) throw Error("no prompts in bench/eval/fairytale-prompts.txt");
    int64_t longest = 0;
    for (const auto& p : prompts) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
    const int64_t max_tokens = 64;

    auto spec_of = [&](size_t i, const std::string& cache) {
      engine::SamplerOptions so;
      so.max_tokens = max_tokens;
      so.steps = steps;
      so.block_length = 32;
      so.cache = cache;
      so.early_stop = false;
      so.n_threads = threads;
      std::vector<std::string> w;
      engine::JobSpec s;
      s.prompt = prompts[i % prompts.size()];
      s.params = engine::sampler_params(so, model.config(), tok, model.config().n_vocab, w);
      return s;
    };

    // One engine for both arms, prepared before any timing.
    engine::EngineOptions o;
    o.parallel = *std::max_element(concurrency.begin(), concurrency.end());
    o.threads = threads;
    o.max_canvas = longest + max_tokens;
    engine::Engine eng(model, o);

    struct Arm {
      std::vector<double> batched_tok_s, sequential_tok_s, ratio, passes_per_step;
    };
    std::map<std::pair<std::string, int>, Arm> arms;
    for (int rep = 0; rep < reps; ++rep) {
      for (const std::string& cache : caches) {
        for (int c : concurrency) {
          const engine::EngineMetrics m0 = eng.metrics();
          auto t0 = Clock::now();
          std::vector<std::shared_ptr<engine::Job>> jobs;
          for (int i = 0; i < c; ++i) jobs.push_back(eng.submit(spec_of(static_cast<size_t>(i), cache)));
          int64_t tokens = 0;
          for (auto& j : jobs) {
            const engine::JobResult r = j->wait();
            if (r.status != engine::JobStatus::kOk) throw Error("job failed: " + r.error);
          }
          const double tb = seconds_since(t0);
          const engine::EngineMetrics m1 = eng.metrics();
          tokens = m1.tokens_committed - m0.tokens_committed;
          t0 = Clock::now();
          for (int i = 0; i < c; ++i) {
            const engine::JobResult r = eng.submit(spec_of(static_cast<size_t>(i), cache))->wait();
            if (r.status != engine::JobStatus::kOk) throw Error("job failed: " + r.error);
          }
          const double ts = seconds_since(t0);
          const int64_t seq_tokens = eng.metrics().tokens_committed - m1.tokens_committed;
          Arm& a = arms[{cache, c}];
          a.batched_tok_s.push_back(static_cast<double>(tokens) / tb);
          a.sequential_tok_s.push_back(static_cast<double>(seq_tokens) / ts);
          a.ratio.push_back(a.batched_tok_s.back() / a.sequential_tok_s.back());
          a.passes_per_step.push_back(static_cast<double>(m1.sequence_steps - m0.sequence_steps) /
                                      static_cast<double>(m1.forward_passes - m0.forward_passes));
          std::fprintf(stderr, "rep %d cache %s C=%d: batched %.1f tok/s, sequential %.1f tok/s (x%.2f)\n",
                       rep, cache.c_str(), c, a.batched_tok_s.back(), a.sequential_tok_s.back(),
                       a.ratio.back());
        }
      }
    }
    nlohmann::json results = nlohmann::json::array();
    for (const auto& [key, a] : arms) {
      results.push_back({{"cache", key.first},
                         {"concurrent_jobs", key.second},
                         {"batched_tok_s_median", median(a.batched_tok_s)},
                         {"sequential_tok_s_median", median(a.sequential_tok_s)},
                         {"speedup_median", median(a.ratio)},
                         {"jobs_per_forward_pass_median", median(a.passes_per_step)},
                         {"batched_tok_s", a.batched_tok_s},
                         {"sequential_tok_s", a.sequential_tok_s}});
    }
    const std::string stem = std::filesystem::path(model_path).stem().string();
    std::string cs, ks;
    for (int c : concurrency) cs.append(cs.empty() ? "" : ",").append(std::to_string(c));
    for (const std::string& k : caches) ks += (ks.empty() ? "" : ",") + k;
    nlohmann::json doc = {
        {"bench", "engine"},
        {"date", utc_now("%Y-%m-%dT%H:%M:%SZ")},
        {"commit", bench::build_commit()},
        {"machine", machine()},
        {"model", stem},
        {"threads", threads},
        {"isa", isa_name(choose_isa(""))},
        {"command", "build/bin/engine_bench --model " + model_path + " --threads " + std::to_string(threads) +
                        " --reps " + std::to_string(reps) + " --steps " + std::to_string(steps) +
                        " --concurrency " + cs + " --caches " + ks},
        {"settings",
         {{"max_tokens", max_tokens},
          {"block_length", 32},
          {"steps", steps},
          {"temperature", 0},
          {"early_stop", false}}},
        {"what",
         "committed tokens/s of C jobs submitted together to one engine vs the same C jobs submitted one "
         "after another (each when the previous ended) to the same engine; medians over reps, arms "
         "interleaved"},
        {"results", results}};
    if (out.empty())
      out = (root / "bench" / "results" /
             ("engine-" + stem + "-t" + std::to_string(threads) + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".json"))
                .string();
    std::ofstream(out) << doc.dump(2) << "\n";
    std::fprintf(stderr, "wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: %s\n", e.what());
    return 1;
  }
  return 0;
}
