// Byte-level BPE tokenizer: vocabulary loading (special ids, attribute promotion, EOG set), special-token
// partition, BPE merges, decoding. Behaviour follows llama.cpp's src/llama-vocab.cpp (load,
// tokenizer_st_partition, llm_tokenizer_bpe_session, token_to_piece); written from its description.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/error.h"
#include "gguf/gguf.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace dllm::tokenizer {

namespace {

uint32_t attr_from_type(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::NORMAL:
      return kAttrNormal;
    case TokenType::UNKNOWN:
      return kAttrUnknown;
    case TokenType::CONTROL:
      return kAttrControl;
    case TokenType::USER_DEFINED:
      return kAttrUserDefined;
    case TokenType::UNUSED:
      return kAttrUnused;
    case TokenType::BYTE:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

// Texts llama.cpp uses to find special tokens when the GGUF has no id key for them, in priority order
// (llama.cpp takes whichever its unordered_map yields first; a fixed order makes ours deterministic:
// Dream gets <|im_end|> as EOT, as llama.cpp did for that file).
const std::vector<std::string_view> kEotTexts = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "[EOT]",         "<end_of_utterance>"};
const std::vector<std::string_view> kEomTexts = {"<|eom_id|>"};
const std::vector<std::string_view> kFimPreTexts = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<PRE>",
                                                    "<|code_prefix|>"};
const std::vector<std::string_view> kFimSufTexts = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<SUF>",
                                                    "<|code_suffix|>"};
const std::vector<std::string_view> kFimMidTexts = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<MID>",
                                                    "<|code_middle|>"};
const std::vector<std::string_view> kFimPadTexts = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>"};
const std::vector<std::string_view> kFimRepTexts = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                                    "<reponame>"};
const std::vector<std::string_view> kFimSepTexts = {"<|file_sep|>"};
// End-of-generation spellings (llama.cpp's EOG list, which includes "</s>": that is how Dream's ordinary
// Qwen2 token 128247 becomes CONTROL and EOG, as llama-vocab.cpp's EOG detection does).
const std::vector<std::string_view> kEogTexts = {
    "<|eot_id|>",         "<|im_end|>", "<|end|>",         "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>",      "</s>",       "<|eom_id|>",      "<EOT>",      "_<EOT>",   "<|end_of_text|>",
    "<end_of_utterance>", "<turn|>",    "<|tool_response>"};  // the last two: Gemma 4 (llama-vocab.cpp)

/// U+2581, SentencePiece's space.
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> texts;
  std::vector<uint32_t> attrs;
  std::vector<std::string> decoded;  ///< bytes of each token as decode() emits them (control -> text too)
  std::unordered_map<std::string_view, int32_t> text_to_id;  ///< views into `texts` (never modified)
  std::array<int32_t, 256> byte_token{};
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  std::unordered_map<uint64_t, Merge> merges;  ///< (left id << 32 | right id) -> rank, merged id
  std::vector<int32_t> special_cache;          ///< control/user-defined/unknown ids, longest text first
  std::vector<uint8_t> eog_flag;
  std::vector<int32_t> eog;
  int32_t bos = -1, eos = -1, eot = -1, eom = -1, mask = -1, pad = -1;
  bool add_bos = false, add_eos = false;
  bool ignore_merges = false;  ///< llama3: a word that is a whole token skips BPE (llama.cpp)
  /// tokenizer.ggml.model "gemma4": SentencePiece-style BPE over raw UTF-8 (llama.cpp llama-vocab.cpp
  /// LLAMA_VOCAB_PRE_TYPE_GEMMA4): spaces become U+2581, the text splits into runs of newlines and
  /// runs of anything else, BPE starts from one symbol per character, a character without a token
  /// falls back to its bytes' <0xXX> tokens; decoding turns U+2581 back into spaces.
  bool spm_bpe = false;
  std::array<int32_t, 256> hex_byte_token{};  ///< spm_bpe: the <0xXX> token of each byte
  std::string pre_name;
  std::string chat_template;
  std::optional<PreTokenizer> pre;

  int32_t lookup(std::string_view t) const {
    auto it = text_to_id.find(t);
    return it == text_to_id.end() ? -1 : it->second;
  }
  void check_id(int32_t id) const {
    if (id < 0 || id >= static_cast<int32_t>(texts.size())) {
      throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(texts.size()) + ")");
    }
  }
  void bpe_word(std::string_view word, std::vector<int32_t>& out) const;
  /// spm_bpe: one run of the escaped text.
  void spm_word(std::string_view word, std::vector<int32_t>& out) const;
  /// Merges adjacent symbols by rank (ids < 0 never merge): out gets the surviving symbols' ids and,
  /// when `first` is given, the index of each one's first input symbol.
  void bpe_merge(std::vector<int32_t>& ids, std::vector<int32_t>& out,
                 std::vector<int32_t>* first = nullptr) const;
};

VocabSpec read_vocab_spec(const gguf::GgufFile& f) {
  VocabSpec s;
  s.model = f.get_string("tokenizer.ggml.model");
  s.pre = f.find_string("tokenizer.ggml.pre");
  s.tokens = f.get_string_array("tokenizer.ggml.tokens");
  if (f.find("tokenizer.ggml.token_type")) s.token_types = f.get_i32_array("tokenizer.ggml.token_type");
  if (f.find("tokenizer.ggml.merges")) s.merges = f.get_string_array("tokenizer.ggml.merges");
  const auto id = [&](const char* key) -> int32_t {
    auto v = f.find_u32(key);
    return v && *v < s.tokens.size() ? static_cast<int32_t>(*v) : -1;  // out of range: ignored, as llama.cpp
  };
  s.bos_id = id("tokenizer.ggml.bos_token_id");
  s.eos_id = id("tokenizer.ggml.eos_token_id");
  s.eot_id = id("tokenizer.ggml.eot_token_id");
  s.eom_id = id("tokenizer.ggml.eom_token_id");
  s.unk_id = id("tokenizer.ggml.unknown_token_id");
  s.sep_id = id("tokenizer.ggml.seperator_token_id");
  s.pad_id = id("tokenizer.ggml.padding_token_id");
  s.mask_id = id("tokenizer.ggml.mask_token_id");
  s.fim_pre_id = id("tokenizer.ggml.fim_pre_token_id");
  s.fim_suf_id = id("tokenizer.ggml.fim_suf_token_id");
  s.fim_mid_id = id("tokenizer.ggml.fim_mid_token_id");
  s.fim_pad_id = id("tokenizer.ggml.fim_pad_token_id");
  s.fim_rep_id = id("tokenizer.ggml.fim_rep_token_id");
  s.fim_sep_id = id("tokenizer.ggml.fim_sep_token_id");
  s.add_bos = f.find_bool("tokenizer.ggml.add_bos_token");
  s.add_eos = f.find_bool("tokenizer.ggml.add_eos_token");
  s.chat_template = f.find_string("tokenizer.chat_template").value_or("");
  return s;
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  return from_vocab(read_vocab_spec(file));
}

Tokenizer Tokenizer::from_vocab(const VocabSpec& spec) {
  if (spec.model != "gpt2" && spec.model != "gemma4") {
    throw Error("unsupported tokenizer.ggml.model: " + spec.model +
                " (supported: gpt2, byte-level BPE; gemma4, SentencePiece-style BPE)");
  }
  auto im = std::make_unique<Impl>();
  Impl& v = *im;
  v.spm_bpe = spec.model == "gemma4";
  v.pre_name = v.spm_bpe ? "gemma4" : spec.pre.value_or("default");
  const PreType pre_type = v.spm_bpe ? PreType::kDefault : pre_type_from_name(v.pre_name);
  v.ignore_merges = pre_type == PreType::kLlama3;
  v.add_bos = pre_type == PreType::kLlama3;  // llama.cpp's per-pre default; the GGUF key overrides it
  if (spec.add_bos) v.add_bos = *spec.add_bos;
  if (v.spm_bpe) v.add_bos = true;  // llama.cpp forces it for Gemma 4 (llama-vocab.cpp, PR #21500)
  v.add_eos = spec.add_eos.value_or(false);
  v.chat_template = spec.chat_template;

  const size_t n = spec.tokens.size();
  if (n == 0) throw Error("tokenizer.ggml.tokens is empty");
  if (n > static_cast<size_t>(INT32_MAX)) throw Error("tokenizer.ggml.tokens has too many entries");
  if (!spec.token_types.empty() && spec.token_types.size() != n) {
    throw Error("tokenizer.ggml.token_type has " + std::to_string(spec.token_types.size()) + " entries but " +
                "tokenizer.ggml.tokens has " + std::to_string(n));
  }
  v.texts = std::move(spec.tokens);
  v.attrs.resize(n);
  v.text_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    v.attrs[i] = spec.token_types.empty() ? kAttrNormal : attr_from_type(spec.token_types[i]);
    v.text_to_id[v.texts[i]] = static_cast<int32_t>(i);  // a repeated text maps to its last id (llama.cpp)
  }

  const ByteUnicodeMap& bu = byte_unicode_map();
  for (int b = 0; b < 256; ++b) v.byte_token[b] = v.lookup(bu.byte_to_utf8[b]);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    v.hex_byte_token[b] = v.lookup(hex);
  }

  // Merges: "left right", rank = position. A merge whose parts or result are not tokens can never
  // fire on token ids; valid byte-level vocabularies have none.
  v.merges.reserve(spec.merges.size());
  std::string joined;
  for (size_t r = 0; r < spec.merges.size(); ++r) {
    const std::string& m = spec.merges[r];
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos) {
      throw Error("malformed tokenizer.ggml.merges entry " + std::to_string(r) + ": \"" + m +
                  "\" (expected \"left right\")");
    }
    const std::string_view mv(m);
    const int32_t l = v.lookup(mv.substr(0, sp)), rt = v.lookup(mv.substr(sp + 1));
    if (l < 0 || rt < 0) continue;
    joined.assign(mv.substr(0, sp));
    joined.append(mv.substr(sp + 1));
    const int32_t res = v.lookup(joined);
    if (res < 0) continue;
    const uint64_t key = (static_cast<uint64_t>(l) << 32) | static_cast<uint32_t>(rt);
    v.merges.emplace(key, Impl::Merge{static_cast<int32_t>(r), res});  // first rank wins
  }

  v.bos = spec.bos_id, v.eos = spec.eos_id, v.eot = spec.eot_id, v.eom = spec.eom_id;
  v.mask = spec.mask_id, v.pad = spec.pad_id;
  int32_t fim_pre = spec.fim_pre_id, fim_suf = spec.fim_suf_id, fim_mid = spec.fim_mid_id;
  int32_t fim_pad = spec.fim_pad_id, fim_rep = spec.fim_rep_id, fim_sep = spec.fim_sep_id;

  // Special ids not given by key are found by text; a match that is not CONTROL is promoted to it
  // ("control-looking token ... its type will be overridden" in llama.cpp's log).
  const auto detect = [&](int32_t& id, const std::vector<std::string_view>& spellings) {
    if (id >= 0) return;
    for (auto t : spellings) {
      const int32_t found = v.lookup(t);
      if (found >= 0) {
        id = found;
        v.attrs[found] |= kAttrControl;
        return;
      }
    }
  };
  detect(v.eot, kEotTexts);
  detect(v.eom, kEomTexts);
  detect(fim_pre, kFimPreTexts);
  detect(fim_suf, kFimSufTexts);
  detect(fim_mid, kFimMidTexts);
  detect(fim_pad, kFimPadTexts);
  detect(fim_rep, kFimRepTexts);
  detect(fim_sep, kFimSepTexts);

  // Control tokens named "...unused..." are unused (llama.cpp).
  for (size_t i = 0; i < n; ++i) {
    if ((v.attrs[i] & kAttrControl) && v.texts[i].find("unused") != std::string::npos)
      v.attrs[i] |= kAttrUnused;
  }

  // End-of-generation set.
  v.eog_flag.assign(n, 0);
  const auto add_eog = [&](int32_t id) {
    if (id >= 0) v.eog_flag[id] = 1;
  };
  add_eog(fim_pad), add_eog(fim_rep), add_eog(fim_sep);
  for (auto t : kEogTexts) {
    const int32_t id = v.lookup(t);
    if (id >= 0) {
      add_eog(id);
      v.attrs[id] |= kAttrControl;
    }
  }
  add_eog(v.eos), add_eog(v.eot), add_eog(v.eom);
  for (size_t i = 0; i < n; ++i) {
    if (v.eog_flag[i]) v.eog.push_back(static_cast<int32_t>(i));
  }

  // Special-token cache for the prompt partition: longest text first (ties by id, deterministic).
  for (size_t i = 0; i < n; ++i) {
    if ((v.attrs[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) && !v.texts[i].empty()) {
      v.special_cache.push_back(static_cast<int32_t>(i));
    }
  }
  std::stable_sort(v.special_cache.begin(), v.special_cache.end(),
                   [&](int32_t a, int32_t b) { return v.texts[a].size() > v.texts[b].size(); });

  // Decoded bytes of every token (token_to_piece with special rendering on).
  v.decoded.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t a = v.attrs[i];
    const std::string& t = v.texts[i];
    if (a & (kAttrControl | kAttrUnknown | kAttrUserDefined)) {
      v.decoded[i] = t;
    } else if ((a & kAttrNormal) && v.spm_bpe) {
      std::string out;
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, kSpmSpace.size(), kSpmSpace) == 0) {
          out += ' ';
          k += kSpmSpace.size();
        } else {
          out += t[k++];
        }
      }
      v.decoded[i] = std::move(out);
    } else if (a & kAttrNormal) {
      std::string out;
      size_t k = 0;
      while (k < t.size()) {
        const Utf8Step st = utf8_step(t, k);
        if (st.status == Utf8Step::kOk && st.cp < bu.cp_to_byte.size() && bu.cp_to_byte[st.cp] >= 0) {
          out += static_cast<char>(bu.cp_to_byte[st.cp]);
        } else {
          out.append(t, k, st.len);  // not a byte-level character: keep its text
        }
        k += st.len;
      }
      v.decoded[i] = std::move(out);
    } else if ((a & kAttrByte) && t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
               std::isxdigit(static_cast<unsigned char>(t[3])) &&
               std::isxdigit(static_cast<unsigned char>(t[4]))) {
      v.decoded[i] = std::string(1, static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
    }  // UNUSED / UNDEFINED, and a BYTE token whose text is not <0xNN>: nothing
  }

  v.pre.emplace(pre_type);
  return Tokenizer(std::move(im));
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

// BPE over one pre-tokenized word: start from one symbol per byte, repeatedly merge the adjacent pair
// with the lowest merge rank (leftmost first on ties), as llama.cpp's llm_tokenizer_bpe_session and
// Hugging Face's BPE model do. O(n log n) with a heap of candidate pairs and lazy invalidation.
void Tokenizer::Impl::bpe_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges) {
    std::string mapped;
    const ByteUnicodeMap& bu = byte_unicode_map();
    for (unsigned char c : word) mapped += bu.byte_to_utf8[c];
    const int32_t id = lookup(mapped);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const int n = static_cast<int>(word.size());
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) {
    const int32_t id = byte_token[static_cast<unsigned char>(word[i])];
    if (id < 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf,
                    "the vocabulary has no token for byte 0x%02X (not a byte-level BPE vocabulary)",
                    static_cast<unsigned char>(word[i]));
      throw Error(buf);
    }
    ids[i] = id;
  }
  bpe_merge(ids, out);
}

void Tokenizer::Impl::spm_word(std::string_view word, std::vector<int32_t>& out) const {
  // A run of newlines that is a token stays whole (llama.cpp's Gemma 4 fix, PR #21343).
  if (word.find_first_not_of('\n') == std::string_view::npos) {
    const int32_t id = lookup(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<int32_t> ids;
  std::vector<std::string_view> chars;
  for (size_t k = 0; k < word.size();) {
    const Utf8Step st = utf8_step(word, k);
    chars.push_back(word.substr(k, st.len));
    ids.push_back(lookup(chars.back()));
    k += st.len;
  }
  std::vector<int32_t> merged, first;
  bpe_merge(ids, merged, &first);
  // A symbol without a token (a character outside the vocabulary, never merged): its bytes' <0xXX>
  // tokens (llama.cpp drops a byte without one).
  for (size_t j = 0; j < merged.size(); ++j) {
    if (merged[j] >= 0) {
      out.push_back(merged[j]);
      continue;
    }
    for (const unsigned char b : chars[static_cast<size_t>(first[j])])
      if (hex_byte_token[b] >= 0) out.push_back(hex_byte_token[b]);
  }
}

void Tokenizer::Impl::bpe_merge(std::vector<int32_t>& ids, std::vector<int32_t>& out,
                                std::vector<int32_t>* first) const {
  const int n = static_cast<int>(ids.size());
  if (n == 0) return;
  std::vector<int32_t> next(n), prev(n);
  for (int i = 0; i < n; ++i) next[i] = i + 1 < n ? i + 1 : -1, prev[i] = i - 1;
  struct Cand {
    int32_t rank, left, right, left_id, right_id, result;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  const auto try_add = [&](int l, int r) {
    if (l < 0 || r < 0 || ids[l] < 0 || ids[r] < 0) return;
    auto it = merges.find((static_cast<uint64_t>(ids[l]) << 32) | static_cast<uint32_t>(ids[r]));
    if (it != merges.end()) heap.push({it->second.rank, l, r, ids[l], ids[r], it->second.result});
  };
  for (int i = 0; i + 1 < n; ++i) try_add(i, i + 1);
  std::vector<uint8_t> dead(n, 0);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    if (dead[c.left] || dead[c.right] || next[c.left] != c.right || ids[c.left] != c.left_id ||
        ids[c.right] != c.right_id) {
      continue;  // stale: one side changed since this pair was queued
    }
    ids[c.left] = c.result;
    dead[c.right] = 1;
    next[c.left] = next[c.right];
    if (next[c.right] >= 0) prev[next[c.right]] = c.left;
    try_add(prev[c.left], c.left);
    try_add(c.left, next[c.left]);
  }
  for (int i = 0; i >= 0; i = next[i]) {
    out.push_back(ids[i]);
    if (first) first->push_back(i);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  const Impl& v = *impl_;
  check_utf8(text, "text");
  std::vector<int32_t> out;
  if (text.empty()) return out;

  // Special-token partition (llama.cpp tokenizer_st_partition): for each special token, longest text
  // first, split every raw fragment at its non-overlapping occurrences, left to right.
  struct Frag {
    int32_t id;  // -1: raw text
    size_t off, len;
  };
  std::vector<Frag> frags{{-1, 0, text.size()}}, next;
  for (int32_t sid : v.special_cache) {
    const uint32_t a = v.attrs[sid];
    if (!parse_special && (a & (kAttrControl | kAttrUnknown))) continue;  // user-defined still match
    const std::string& st = v.texts[sid];
    if (text.find(st) == std::string_view::npos) continue;  // cheap filter over the whole text
    next.clear();
    for (const Frag& f : frags) {
      if (f.id >= 0) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.off;
      const size_t end = f.off + f.len;
      while (pos < end) {
        const size_t m = text.substr(0, end).find(st, pos);
        if (m == std::string_view::npos) break;
        if (m > pos) next.push_back({-1, pos, m - pos});
        next.push_back({sid, m, st.size()});
        pos = m + st.size();
      }
      if (pos < end) next.push_back({-1, pos, end - pos});
    }
    frags.swap(next);
  }

  // BPE over the pre-tokenized words of each raw fragment; repeated words come from a per-call cache.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
  std::vector<int32_t> pool;
  for (const Frag& f : frags) {
    if (f.id >= 0) {
      out.push_back(f.id);
      continue;
    }
    if (v.spm_bpe) {
      // Spaces as U+2581, then runs of newlines and runs of the rest ("[^\n]+|[\n]+").
      std::string esc;
      for (const char ch : text.substr(f.off, f.len)) {
        if (ch == ' ')
          esc += kSpmSpace;
        else
          esc += ch;
      }
      for (size_t k = 0; k < esc.size();) {
        const bool nl = esc[k] == '\n';
        size_t e = k;
        while (e < esc.size() && (esc[e] == '\n') == nl) ++e;
        v.spm_word(std::string_view(esc).substr(k, e - k), out);
        k = e;
      }
      continue;
    }
    for (std::string_view word : v.pre->split(text.substr(f.off, f.len))) {
      auto it = cache.find(word);
      if (it == cache.end()) {
        const uint32_t start = static_cast<uint32_t>(pool.size());
        v.bpe_word(word, pool);
        it = cache.emplace(word, std::make_pair(start, static_cast<uint32_t>(pool.size()) - start)).first;
      }
      out.insert(out.end(), pool.begin() + it->second.first,
                 pool.begin() + it->second.first + it->second.second);
    }
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    impl_->check_id(id);
    if (impl_->attrs[id] & (kAttrControl | kAttrUnknown)) continue;
    out += impl_->decoded[id];
  }
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  impl_->check_id(id);
  if (!render_special && (impl_->attrs[id] & (kAttrControl | kAttrUnknown))) return {};
  return impl_->decoded[id];
}

const std::string& Tokenizer::token_text(int32_t id) const {
  impl_->check_id(id);
  return impl_->texts[id];
}

int32_t Tokenizer::find_token(std::string_view text) const {
  return impl_->lookup(text);
}

int32_t Tokenizer::bos_id() const {
  return impl_->bos;
}
int32_t Tokenizer::eos_id() const {
  return impl_->eos;
}
int32_t Tokenizer::eot_id() const {
  return impl_->eot;
}
int32_t Tokenizer::mask_id() const {
  return impl_->mask;
}
int32_t Tokenizer::pad_id() const {
  return impl_->pad;
}
bool Tokenizer::add_bos() const {
  return impl_->add_bos;
}
bool Tokenizer::add_eos() const {
  return impl_->add_eos;
}

bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && id < n_tokens() && impl_->eog_flag[id];
}
const std::vector<int32_t>& Tokenizer::eog_ids() const {
  return impl_->eog;
}
bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_tokens() && (impl_->attrs[id] & kAttrControl);
}
uint32_t Tokenizer::attr(int32_t id) const {
  impl_->check_id(id);
  return impl_->attrs[id];
}
int32_t Tokenizer::n_tokens() const {
  return static_cast<int32_t>(impl_->texts.size());
}
bool Tokenizer::is_sampleable(int32_t id) const {
  return id >= 0 && id < n_tokens() && !(impl_->attrs[id] & kAttrUnused);
}
std::vector<bool> Tokenizer::sampleable_mask(int32_t n_vocab) const {
  std::vector<bool> m(std::max(n_vocab, 0));
  for (int32_t i = 0; i < n_vocab; ++i) m[i] = is_sampleable(i);
  return m;
}
const std::string& Tokenizer::pre() const {
  return impl_->pre_name;
}
const std::string& Tokenizer::chat_template() const {
  return impl_->chat_template;
}

// ---- StreamDecoder ----

std::string StreamDecoder::push(int32_t id) {
  return push_bytes(tok_->token_to_piece(id, false));
}

std::string StreamDecoder::push_bytes(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  size_t i = 0;
  while (i < pending_.size()) {
    const Utf8Step st = utf8_step(pending_, i);
    // Only a valid prefix that reaches the end may still become a character: it waits (at most 3
    // bytes). Anything else is final now: a character, or a maximal subpart that no later byte can
    // complete, written as U+FFFD at once so the stream goes on.
    if (st.status == Utf8Step::kTruncated) break;
    if (st.status == Utf8Step::kOk) {
      out.append(pending_, i, static_cast<size_t>(st.len));
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += static_cast<size_t>(st.len);
  }
  pending_.erase(0, i);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_replace_invalid(pending_);
  pending_.clear();
  return out;
}

}  // namespace dllm::tokenizer
