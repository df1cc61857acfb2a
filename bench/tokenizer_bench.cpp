// Tokenizer throughput: encode ~1 MB of text with the Dream (qwen2) and LLaDA (bailingmoe) reference
// tokenizers, parse_special on, and load Dream's 152k-token vocabulary. Only useful for speed:
// correctness is in tests/tokenizer.
//
// Text: words drawn with a fixed seed from ../shared/reference/tokenizer/corpus-public.jsonl (prose,
// code, CJK, emoji, ...), or the file named by $DLLM_BENCH_TEXT. Reference files: $DLLM_SHARED, else
// the shared/ folder beside the checkout.
//
// Usage: tokenizer_bench [--note TEXT] [--out PATH | --no-results] [google-benchmark flags]
// Prints Google Benchmark's table, then writes bench/results/tokenizer-<host>-<UTC time>.json (or PATH):
// kind, date, machine, commit, command, note, the 1-minute load average before and after, the text,
// and per model MB/s (MB = 10^6 bytes) of CPU time and of wall time, the median over the repetitions
// (5 unless --benchmark_repetitions is given), with every repetition listed. CPU time is the figure to
// quote from a shared machine: wall time also counts the slices other processes took.
#include <benchmark/benchmark.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

namespace {

std::filesystem::path shared_dir() {
  if (const char* e = std::getenv("DLLM_SHARED")) return e;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared";
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Undo JSON string escapes of the "text" field (enough for the corpus: \n \t \r \" \\ \uXXXX).
std::string json_text_field(const std::string& line) {
  const std::string key = "\"text\": \"";
  size_t i = line.find(key);
  if (i == std::string::npos) return {};
  i += key.size();
  std::string out;
  const auto put = [&](uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | cp >> 6), out += char(0x80 | (cp & 63));
    } else if (cp < 0x10000) {
      out += char(0xE0 | cp >> 12), out += char(0x80 | ((cp >> 6) & 63)), out += char(0x80 | (cp & 63));
    } else {
      out += char(0xF0 | cp >> 18), out += char(0x80 | ((cp >> 12) & 63)),
          out += char(0x80 | ((cp >> 6) & 63)), out += char(0x80 | (cp & 63));
    }
  };
  while (i < line.size() && line[i] != '"') {
    if (line[i] != '\\') {
      out += line[i++];
      continue;
    }
    const char c = line[i + 1];
    i += 2;
    if (c == 'n')
      out += '\n';
    else if (c == 't')
      out += '\t';
    else if (c == 'r')
      out += '\r';
    else if (c == 'u') {
      uint32_t cp = std::stoul(line.substr(i, 4), nullptr, 16);
      i += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && line.compare(i, 2, "\\u") == 0) {
        const uint32_t lo = std::stoul(line.substr(i + 2, 4), nullptr, 16);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        i += 6;
      }
      put(cp);
    } else {
      out += c;
    }
  }
  return out;
}

const std::string& bench_text() {
  static const std::string text = [] {
    if (const char* p = std::getenv("DLLM_BENCH_TEXT")) return read_all(p);
    // Words of the corpus lines' "text" fields, in random order (seed 42), up to 1 MiB.
    std::vector<std::string> words;
    std::istringstream lines(read_all(shared_dir() / "reference/tokenizer/corpus-public.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const std::string t = json_text_field(line);
      size_t b = 0;
      for (size_t i = 0; i <= t.size(); ++i) {
        if (i == t.size() || t[i] == ' ') {
          if (i > b) words.push_back(t.substr(b, i - b));
          b = i + 1;
        }
      }
    }
    if (words.empty()) words.push_back("missing corpus");
    std::mt19937 rng(42);
    std::string s;
    while (s.size() < (1u << 20)) {
      s += words[rng() % words.size()];
      s += (rng() % 13 == 0) ? "\n" : " ";
    }
    return s;
  }();
  return text;
}

const dllm::tokenizer::Tokenizer& tok(const char* file) {
  static std::unique_ptr<dllm::tokenizer::Tokenizer> t[2];
  const int k = std::string(file).find("dream") != std::string::npos;
  if (!t[k]) {
    auto f = dllm::gguf::GgufFile::open((shared_dir() / "reference" / file).string());
    t[k] = std::make_unique<dllm::tokenizer::Tokenizer>(dllm::tokenizer::Tokenizer::from_gguf(f));
  }
  return *t[k];
}

void encode_1mb(benchmark::State& state, const char* file) {
  const auto& t = tok(file);
  const std::string& text = bench_text();
  size_t n_ids = 0;
  for (auto _ : state) {
    auto ids = t.encode(text, true);
    n_ids = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(n_ids);
  state.counters["MB"] = text.size() / 1e6;
}

void load_vocab(benchmark::State& state, const char* file) {
  auto f = dllm::gguf::GgufFile::open((shared_dir() / "reference" / file).string());
  for (auto _ : state) {
    auto t = dllm::tokenizer::Tokenizer::from_gguf(f);
    benchmark::DoNotOptimize(&t);
  }
}

BENCHMARK_CAPTURE(encode_1mb, dream_qwen2, "tiny-dream-q4km.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_1mb, llada_bailingmoe, "tiny-llada-q4km.gguf")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(load_vocab, dream_152k, "tiny-dream-q4km.gguf")->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// The results file.

using dllm::bench::repo_root;
using dllm::bench::run_command;

std::string utc_now(const char* format) {
  char buf[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(buf, sizeof buf, format, std::gmtime(&now));
  return buf;
}

/// The 1-, 5- and 15-minute load averages (/proc/loadavg).
std::vector<double> load_avg() {
  std::ifstream f("/proc/loadavg");
  std::vector<double> v(3, 0.0);
  f >> v[0] >> v[1] >> v[2];
  return v;
}

/// Same fields as bench/e2e_bench.py's machine(): host, cpu, logical_cpus, mem_bytes, isa_flags, kernel.
nlohmann::json machine() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  std::string cpu, flags;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    const auto value = [&] { return line.substr(line.find(':') + 2); };
    if (cpu.empty() && line.rfind("model name", 0) == 0) cpu = value();
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = " " + value() + " ";
  }
  nlohmann::json isa = nlohmann::json::array();
  for (const char* f : {"avx2", "avx_vnni", "avx512f", "avx512_vnni"}) {
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) isa.push_back(f);
  }
  utsname u{};
  uname(&u);
  return {{"host", host},
          {"cpu", cpu},
          {"logical_cpus", sysconf(_SC_NPROCESSORS_ONLN)},
          {"mem_bytes", int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE)},
          {"isa_flags", isa},
          {"kernel", u.release}};
}

/// Shows the usual console table and keeps every repetition's run for the results file.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.run_type == Run::RT_Iteration && !r.error_occurred) runs_[r.run_name.function_name].push_back(r);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, std::vector<Run>>& runs() const { return runs_; }

 private:
  std::map<std::string, std::vector<Run>> runs_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// encode_1mb/<model>: MB/s of CPU and wall time per repetition and their medians.
nlohmann::json encode_figures(const std::vector<benchmark::BenchmarkReporter::Run>& runs, const char* gguf) {
  const double mb = bench_text().size() / 1e6;
  nlohmann::json reps = nlohmann::json::array();
  std::vector<double> cpu, wall;
  for (const auto& r : runs) {
    const double n = static_cast<double>(r.iterations);
    cpu.push_back(n * mb / r.cpu_accumulated_time);
    wall.push_back(n * mb / r.real_accumulated_time);
    reps.push_back({{"iterations", r.iterations},
                    {"cpu_s", r.cpu_accumulated_time},
                    {"wall_s", r.real_accumulated_time},
                    {"mb_per_s_cpu", cpu.back()},
                    {"mb_per_s_wall", wall.back()}});
  }
  const auto tokens = runs.empty() ? 0.0 : runs[0].counters.at("tokens").value;
  return {{"gguf", gguf},
          {"tokens", static_cast<int64_t>(tokens)},
          {"mb_per_s_cpu", median(cpu)},
          {"mb_per_s_wall", median(wall)},
          {"ms_per_mb_cpu", 1000.0 / median(cpu)},
          {"repetitions", reps}};
}

/// load_vocab/<model>: ms per load, CPU and wall, medians over the repetitions.
nlohmann::json load_figures(const std::vector<benchmark::BenchmarkReporter::Run>& runs, const char* gguf) {
  std::vector<double> cpu, wall;
  for (const auto& r : runs) {
    cpu.push_back(1000.0 * r.cpu_accumulated_time / static_cast<double>(r.iterations));
    wall.push_back(1000.0 * r.real_accumulated_time / static_cast<double>(r.iterations));
  }
  return {{"gguf", gguf}, {"ms_cpu", median(cpu)}, {"ms_wall", median(wall)}, {"repetitions", runs.size()}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string command, note, out_path;
  bool write = true, has_repetitions = false;
  std::vector<std::string> args = {argv[0]};
  // The command as a shell would take it back (arguments with spaces single-quoted).
  const auto quoted = [](const std::string& a) {
    return a.find_first_of(" \t\"'") == std::string::npos ? a : "'" + a + "'";
  };
  for (int i = 0; i < argc; ++i) {
    command += (i ? " " : "") + quoted(argv[i]);
    if (i == 0) continue;
    const std::string a = argv[i];
    if ((a == "--note" || a == "--out") && i + 1 < argc) {
      (a == "--note" ? note : out_path) = argv[i + 1];
      command += " " + quoted(argv[++i]);
    } else if (a == "--no-results") {
      write = false;
    } else {
      if (a.rfind("--benchmark_repetitions=", 0) == 0) has_repetitions = true;
      args.push_back(a);
    }
  }
  if (!has_repetitions) args.push_back("--benchmark_repetitions=5");
  std::vector<char*> cargs;
  for (std::string& a : args) cargs.push_back(a.data());
  int cargc = static_cast<int>(cargs.size());
  benchmark::Initialize(&cargc, cargs.data());
  if (benchmark::ReportUnrecognizedArguments(cargc, cargs.data())) return 2;

  const std::filesystem::path root = repo_root();
  const std::string date = utc_now("%Y-%m-%dT%H:%M:%SZ");
  const auto load_before = load_avg();
  CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto load_after = load_avg();
  benchmark::Shutdown();
  if (!write) return 0;

  nlohmann::json r;
  r["kind"] = "tokenizer";
  r["date"] = date;
  r["machine"] = machine();
  r["commit"] = dllm::bench::build_commit();
  r["command"] = command;
  r["note"] = note;
  r["load_avg_before"] = load_before;
  r["load_avg_after"] = load_after;
  const char* text_env = std::getenv("DLLM_BENCH_TEXT");
  r["text"] = {{"source", text_env ? std::string(text_env)
                                   : "words of reference/tokenizer/corpus-public.jsonl, shuffled (seed 42)"},
               {"bytes", bench_text().size()}};
  r["models"] = nlohmann::json::object();
  r["load_vocab"] = nlohmann::json::object();
  const std::map<std::string, const char*> gguf = {{"dream_qwen2", "tiny-dream-q4km.gguf"},
                                                   {"llada_bailingmoe", "tiny-llada-q4km.gguf"},
                                                   {"dream_152k", "tiny-dream-q4km.gguf"}};
  for (const auto& [name, runs] : reporter.runs()) {
    const std::string kind = name.substr(0, name.find('/')), model = name.substr(name.find('/') + 1);
    const char* file = gguf.count(model) ? gguf.at(model) : "";
    if (kind == "encode_1mb") r["models"][model] = encode_figures(runs, file);
    if (kind == "load_vocab") r["load_vocab"][model] = load_figures(runs, file);
  }
  std::filesystem::path out = out_path;
  if (out.empty()) {
    char host[256] = "host";
    gethostname(host, sizeof host - 1);
    out = root / "bench" / "results" /
          ("tokenizer-" + std::string(host) + "-" + utc_now("%Y%m%dT%H%M%SZ") + ".json");
  }
  std::filesystem::create_directories(out.parent_path());
  std::ofstream(out) << r.dump(2) << "\n";
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
