// Helpers shared by the libFuzzer harnesses: where the reference files are, loading the tokenizers
// the harnesses run on, and FUZZ_CHECK for properties (a failed property aborts, which libFuzzer
// reports as a crash and saves the input, like a sanitizer finding).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

/// Aborts with the failed condition and a message when `cond` is false.
#define FUZZ_CHECK(cond, msg)                                                                \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d): %s\n", #cond, __FILE__, __LINE__, \
                   std::string(msg).c_str());                                                \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

namespace dllm::fuzz {

/// The shared/ folder beside the checkout ($DLLM_SHARED overrides), as the tests find it.
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("DLLM_SHARED")) return env;
  return DLLM_SHARED_DIR;
}

/// A tokenizer built from a GGUF file, with the file's name for messages.
struct NamedTokenizer {
  std::string name;
  std::unique_ptr<tokenizer::Tokenizer> tok;
};

/// The tokenizers of the tiny reference models (LLaDA's Llama-3-style template, Dream's real Qwen2
/// vocabulary and ChatML template) and of the bundled demo model, in that order, skipping files
/// that are absent. Exits with a message when none is found: the harness has nothing to run on.
inline std::vector<NamedTokenizer> load_reference_tokenizers() {
  const std::vector<std::filesystem::path> files = {
      shared_dir() / "reference" / "tiny-llada-q4km.gguf",
      shared_dir() / "reference" / "tiny-dream-q4km.gguf",
      std::filesystem::path(DLLM_SOURCE_DIR) / "models" / "tiny-llada-fairytales-q4km.gguf",
  };
  std::vector<NamedTokenizer> out;
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) {
      std::fprintf(stderr, "fuzz: %s is absent; fuzzing without its tokenizer\n", f.c_str());
      continue;
    }
    const gguf::GgufFile file = gguf::GgufFile::open(f.string());
    out.push_back({f.filename().string(),
                   std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(file))});
  }
  if (out.empty()) {
    std::fprintf(stderr, "fuzz: no tokenizer found (set DLLM_SHARED to the shared/ folder)\n");
    std::exit(1);
  }
  return out;
}

/// Strict UTF-8 check written from RFC 3629 section 4's table of well-formed byte sequences, as an
/// oracle independent of src/tokenizer/utf8.cpp.
inline bool is_valid_utf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = s[i];
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c <= 0x7F) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = 3;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > n || s[i + 1] < lo || s[i + 1] > hi) return false;
    for (size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
    i += len;
  }
  return true;
}

inline bool is_valid_utf8(const std::string& s) {
  return is_valid_utf8(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

}  // namespace dllm::fuzz
