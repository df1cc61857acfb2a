// Tokenizer throughput: encode ~1 MB of text with the Dream (qwen2) and LLaDA (bailingmoe) reference
// tokenizers, parse_special on. Prints MB/s (Google Benchmark's bytes_per_second). Writes nothing under
// bench/results yet. Only useful for speed: correctness is in tests/tokenizer.
//
// Text: words drawn with a fixed seed from ../shared/reference/tokenizer/corpus-public.jsonl (prose,
// code, CJK, emoji, ...), or the file named by $DLLM_BENCH_TEXT. Reference files: $DLLM_SHARED, else
// the shared/ folder beside the checkout.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace

BENCHMARK_MAIN();
