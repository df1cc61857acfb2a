// Pre-tokenizer regexes, compiled with PCRE2 (UTF + UCP, JIT when the library has it).
//
// Sources of the patterns (tokenizer.json "pre_tokenizer" Split regexes):
//   gpt2     : openai/gpt-2 encoder.py (also every GPT-2-style tokenizer.json)
//   llama3   : meta-llama/Meta-Llama-3-8B tokenizer.json
//   qwen2    : Qwen/Qwen2.5 tokenizer.json (Dream-v0-Instruct-7B ships the same vocabulary)
//   bailingmoe (also bailingmoe2, llada-moe): inclusionAI Ling tokenizer.json
//   default  : no tokenizer.json; llama.cpp's fallback chain for LLAMA_VOCAB_PRE_TYPE_DEFAULT
// Where llama.cpp runs a different regex than tokenizer.json we follow llama.cpp; docs/tokenizer.md
// lists each case and tests/tokenizer/pretokenizer_test.cpp pins it.
#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace dllm::tokenizer {

PreType pre_type_from_name(std::string_view pre) {
  if (pre == "default") return PreType::kDefault;
  if (pre == "gpt2" || pre == "gpt-2") return PreType::kGpt2;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe") return PreType::kLlama3;
  if (pre == "qwen2") return PreType::kQwen2;
  if (pre == "bailingmoe" || pre == "bailingmoe2" || pre == "llada-moe") return PreType::kBailingMoe;
  throw Error(
      "unsupported tokenizer.ggml.pre: " + std::string(pre) +
      " (supported: qwen2, bailingmoe, bailingmoe2, llada-moe, gpt2, gpt-2, default, llama-bpe, llama3)");
}

std::vector<std::string> pre_regexes(PreType type) {
  // The contractions of llama3/qwen2/bailingmoe are written `(?i:'s|...)` in tokenizer.json; llama.cpp
  // rewrites them as ASCII classes ('[sS] ...), which differ from PCRE2's Unicode caseless matching for
  // U+017F LATIN SMALL LETTER LONG S (folds to 's') and U+212A KELVIN SIGN. We follow llama.cpp.
  const std::string contractions_ci = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
  switch (type) {
    case PreType::kGpt2:
      return {R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"};
    case PreType::kLlama3:
      return {contractions_ci +
              R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreType::kQwen2:
      return {contractions_ci +
              R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
    case PreType::kBailingMoe:
      // Possessive ?+ and ++ kept as in tokenizer.json (llama.cpp made them greedy; the result is the
      // same because each possessive class is disjoint from what follows it, see docs/tokenizer.md).
      return {R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE]))"
              R"(|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)"};
    case PreType::kDefault:
      return {R"([\p{P}\$\+<=>\^~\|]+)",
              R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))", R"(\p{N}+)",
              R"([0-9][0-9][0-9])"};
    case PreType::kSentinel:
      break;
  }
  throw Error("internal error: bad pre-tokenizer type");
}

// Unicode White_Space (PropList.txt), the set llama.cpp's unicode tables use for \s.
static constexpr const char* kWhiteSpace =
    R"(\x{09}-\x{0D}\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

std::string expand_whitespace_classes(std::string_view p) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 's') {
        out += in_class ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
      } else if (n == 'S' && !in_class) {
        out += "[^" + std::string(kWhiteSpace) + "]";
      } else if (n == 'S') {
        throw Error("internal error: \\S inside a character class is not supported");
      } else {
        out += c;
        out += n;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // a ']' right after '[' or '[^' is a literal, not the end of the class
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

namespace {

struct Regex {
  pcre2_code* code = nullptr;
  bool jit = false;
};

// Per-thread JIT stack: the default 32 KiB machine stack is too small for long whitespace runs.
struct ThreadMatchState {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  ThreadMatchState() {
    ctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
    if (ctx && stack) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~ThreadMatchState() {
    if (stack) pcre2_jit_stack_free(stack);
    if (ctx) pcre2_match_context_free(ctx);
  }
};

ThreadMatchState& thread_state() {
  thread_local ThreadMatchState st;
  return st;
}

}  // namespace

struct PreTokenizer::Impl {
  std::vector<Regex> regexes;
  ~Impl() {
    for (auto& r : regexes) pcre2_code_free(r.code);
  }
};

PreTokenizer::PreTokenizer(PreType type) : PreTokenizer(pre_regexes(type)) {}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns, bool expand_whitespace)
    : impl_(std::make_unique<Impl>()) {
  uint32_t have_jit = 0;
  pcre2_config(PCRE2_CONFIG_JIT, &have_jit);
  for (const auto& pat : patterns) {
    const std::string expanded = expand_whitespace ? expand_whitespace_classes(pat) : pat;
    int err = 0;
    PCRE2_SIZE err_off = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &err_off, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error("pre-tokenizer regex does not compile at offset " + std::to_string(err_off) + ": " +
                  reinterpret_cast<const char*>(msg) + " (pattern " + pat + ")");
    }
    Regex r{code, false};
    if (have_jit) r.jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    impl_->regexes.push_back(r);
  }
}

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  ThreadMatchState& ts = thread_state();
  for (const Regex& re : impl_->regexes) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re.code, nullptr);
    if (!md) throw Error("out of memory in the pre-tokenizer");
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    for (std::string_view seg : pieces) {
      // Each piece is matched on its own, as llama.cpp does: lookaheads do not see past its end.
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(seg.data());
      size_t last_end = 0, offset = 0;
      while (offset < seg.size()) {
        int rc = pcre2_match(re.code, subject, seg.size(), offset, PCRE2_NO_UTF_CHECK, md, ts.ctx);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc = pcre2_match(re.code, subject, seg.size(), offset, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                           nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          pcre2_match_data_free(md);
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          throw Error(std::string("pre-tokenizer regex match failed: ") + reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t ms = ov[0], me = ov[1];
        if (me == ms) {  // empty match: step over one character
          if (ms >= seg.size()) break;
          offset = ms + utf8_step(seg, ms).len;
          continue;
        }
        if (ms > last_end) next.push_back(seg.substr(last_end, ms - last_end));
        next.push_back(seg.substr(ms, me - ms));
        last_end = offset = me;
      }
      if (last_end < seg.size()) next.push_back(seg.substr(last_end));
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace dllm::tokenizer
