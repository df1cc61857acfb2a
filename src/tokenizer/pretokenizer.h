// Pre-tokenizers: split text into words before BPE, by the regexes of each tokenizer.ggml.pre value,
// run with PCRE2 (UTF + UCP, JIT when available). Each regex is compiled once per Tokenizer.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dllm::tokenizer {

/// The regex family of a tokenizer.ggml.pre value (several values share one family, as in llama.cpp).
enum class PreType { kDefault, kGpt2, kLlama3, kQwen2, kBailingMoe, kSentinel };

/// tokenizer.ggml.pre -> family. Throws dllm::Error "unsupported tokenizer.ggml.pre: <value> (supported:
/// ...)" for any other value.
PreType pre_type_from_name(std::string_view pre);

/// The regexes of a family in PCRE2 syntax, as written in the model's tokenizer.json except where
/// docs/tokenizer.md says we follow llama.cpp (ASCII-only case folding of contractions, \s = the
/// Unicode White_Space property). Applied in order, each one splitting the pieces of the previous.
std::vector<std::string> pre_regexes(PreType type);

/// Replaces \s and \S (outside and inside [...]) by the explicit White_Space class, so that PCRE2's
/// \s (which also matches U+180E) agrees with llama.cpp's whitespace table.
std::string expand_whitespace_classes(std::string_view pattern);

class PreTokenizer {
 public:
  /// Compiles the regexes (throws dllm::Error on a PCRE2 compile error, naming the offset).
  explicit PreTokenizer(PreType type);
  /// Compile arbitrary patterns (tests). expand_whitespace = false keeps PCRE2's own \s.
  explicit PreTokenizer(const std::vector<std::string>& patterns, bool expand_whitespace = true);
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  /// Splits valid UTF-8 `text` into consecutive pieces covering it exactly (matches and the gaps
  /// between them, like llama.cpp's unicode_regex_split). Thread-safe.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dllm::tokenizer
