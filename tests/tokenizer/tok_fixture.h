// Shared loading of the reference tokenizers (one GGUF parse per test binary) and small file readers.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace dllm::test {

/// Tokenizer of ../shared/reference/<rel> (a GGUF), built once.
inline const tokenizer::Tokenizer& reference_tokenizer(const std::string& rel) {
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  auto& slot = cache[rel];
  if (!slot) {
    auto file = gguf::GgufFile::open(reference(rel).string());
    slot = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(file));
  }
  return *slot;
}
inline const tokenizer::Tokenizer& llada_tok() {
  return reference_tokenizer("tiny-llada-q4km.gguf");
}
inline const tokenizer::Tokenizer& dream_tok() {
  return reference_tokenizer("tiny-dream-q4km.gguf");
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// "1 2 3" -> {1, 2, 3}
inline std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream is(line);
  int64_t x;
  while (is >> x) ids.push_back(static_cast<int32_t>(x));
  return ids;
}

}  // namespace dllm::test
