// Byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2") built from a GGUF's tokenizer.ggml.* keys,
// behaving like llama.cpp's llama-vocab (commit 3f545be, whose tools made the tests' reference files):
// the same pre-tokenizer regexes chosen by tokenizer.ggml.pre, the same special-token partition of the
// prompt text, the same EOT/EOG detection by token text, the same promotion of control-looking tokens
// to CONTROL. See docs/tokenizer.md for every place where we deliberately follow or differ.
//
// Not here: SentencePiece/WordPiece vocabularies (an error names the model), text normalization
// (llama.cpp applies none to BPE vocabularies, so neither do we), the chat template (chat.h).
//
// Thread safety: a Tokenizer is immutable after from_gguf()/from_vocab(); every const method may be
// called from several threads at once. StreamDecoder is per-stream state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dllm::gguf {
class GgufFile;
}

namespace dllm::tokenizer {

/// tokenizer.ggml.token_type values (llama.cpp's llama_token_type; serialized, so pinned).
enum class TokenType : int32_t {
  UNDEFINED = 0,
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
  kSentinel = 7,
};

/// Attribute bits of a token after loading (several may be set: a USER_DEFINED token whose text looks
/// like a control token is promoted to USER_DEFINED | CONTROL, as llama.cpp does).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
};

/// Everything the tokenizer is built from: the tokenizer.ggml.* metadata of a GGUF, or a hand-made
/// vocabulary in tests. Ids are -1 when the key is absent.
struct VocabSpec {
  std::string model =
      "gpt2";  ///< tokenizer.ggml.model; "gpt2" (byte-level BPE) or "gemma4" (SentencePiece-style BPE)
  std::optional<std::string> pre;    ///< tokenizer.ggml.pre; absent = "default" (as llama.cpp)
  std::vector<std::string> tokens;   ///< tokenizer.ggml.tokens, in GPT-2 byte-to-unicode form
  std::vector<int32_t> token_types;  ///< tokenizer.ggml.token_type (TokenType); empty = all NORMAL
  std::vector<std::string> merges;   ///< tokenizer.ggml.merges, "left right", rank = index
  int32_t bos_id = -1, eos_id = -1, eot_id = -1, eom_id = -1, unk_id = -1, sep_id = -1, pad_id = -1;
  int32_t mask_id = -1;  ///< tokenizer.ggml.mask_token_id (the diffusion mask id)
  int32_t fim_pre_id = -1, fim_suf_id = -1, fim_mid_id = -1, fim_pad_id = -1, fim_rep_id = -1,
          fim_sep_id = -1;
  std::optional<bool> add_bos;  ///< tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;  ///< tokenizer.ggml.add_eos_token
  std::string chat_template;    ///< tokenizer.chat_template (empty when absent)
};

/// Reads the tokenizer.* keys of a GGUF into a VocabSpec. Throws dllm::Error when tokenizer.ggml.tokens
/// is missing or a key has the wrong type.
VocabSpec read_vocab_spec(const gguf::GgufFile& file);

class Tokenizer {
 public:
  /// Builds the tokenizer from the GGUF's tokenizer.* keys. Throws dllm::Error naming the value for an
  /// unsupported tokenizer.ggml.model (anything but "gpt2" or "gemma4") or an unknown tokenizer.ggml.pre, a
  /// malformed merge, or a token_type array whose length differs from the token count.
  static Tokenizer from_gguf(const gguf::GgufFile& file);
  /// Same from an explicit specification (tests, tools).
  static Tokenizer from_vocab(const VocabSpec& spec);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// Text -> token ids, without BOS/EOS (the caller adds BOS; see add_bos() and chat.h).
  /// parse_special = true: control, user-defined and unknown-type token texts in `text` become their
  /// single id (longest token text first, as llama.cpp's tokenizer_st_partition). false: only
  /// user-defined tokens do (llama.cpp keeps those even then); everything else is plain text.
  /// Throws dllm::UsageError "... not valid UTF-8 ... at byte offset N" when `text` is not valid UTF-8.
  /// The empty string gives an empty vector.
  std::vector<int32_t> encode(std::string_view text, bool parse_special) const;

  /// Ids -> bytes, exactly (no space clean-up, no U+FFFD: the result may be invalid UTF-8 when the ids
  /// split a character; use StreamDecoder for printable text). Control and unknown-type tokens are
  /// skipped, unused-type tokens give nothing, user-defined tokens give their text. Throws
  /// dllm::Error for an id outside [0, n_tokens()).
  std::string decode(std::span<const int32_t> ids) const;

  /// Bytes of one token. render_special = true (default) renders control tokens as their text (what
  /// `llama-tokenize` prints); false gives "" for them (what decode() does). Throws for a bad id.
  std::string token_to_piece(int32_t id, bool render_special = true) const;
  /// The vocabulary entry as stored (GPT-2 byte-to-unicode form for normal tokens).
  const std::string& token_text(int32_t id) const;
  /// Token id for an exact vocabulary text, or -1.
  int32_t find_token(std::string_view text) const;

  int32_t bos_id() const;   ///< tokenizer.ggml.bos_token_id, -1 when absent
  int32_t eos_id() const;   ///< tokenizer.ggml.eos_token_id, -1 when absent
  int32_t eot_id() const;   ///< eot key, else detected by text (<|eot_id|>, <|im_end|>, ...), else -1
  int32_t mask_id() const;  ///< tokenizer.ggml.mask_token_id, -1 when absent
  int32_t pad_id() const;   ///< tokenizer.ggml.padding_token_id, -1 when absent
  bool add_bos() const;     ///< tokenizer.ggml.add_bos_token (default false for BPE)
  bool add_eos() const;     ///< tokenizer.ggml.add_eos_token (default false)

  /// End-of-generation: EOS, EOT, EOM, FIM pad/rep/sep and every token whose text is one of
  /// llama.cpp's end-of-turn spellings (<|eot_id|>, <|im_end|>, <|endoftext|>, </s>, ...).
  bool is_eog(int32_t id) const;
  /// All EOG ids, ascending.
  const std::vector<int32_t>& eog_ids() const;
  /// CONTROL attribute set (after promotion).
  bool is_control(int32_t id) const;
  uint32_t attr(int32_t id) const;  ///< TokenAttr bits

  /// Number of entries in tokenizer.ggml.tokens. The model's embedding may have more rows; ids at or
  /// beyond n_tokens() have no text and must never be sampled.
  int32_t n_tokens() const;
  /// False for ids outside [0, n_tokens()) and for tokens of type UNUSED (padding rows such as
  /// Dream's [PAD151667..]). The mask id is sampleable by this test; samplers exclude it themselves.
  bool is_sampleable(int32_t id) const;
  /// is_sampleable() for ids 0..n_vocab-1 (n_vocab = rows of the LM head, may exceed n_tokens()).
  std::vector<bool> sampleable_mask(int32_t n_vocab) const;

  const std::string& pre() const;            ///< tokenizer.ggml.pre as read ("default" when absent)
  const std::string& chat_template() const;  ///< tokenizer.chat_template, "" when absent

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  static Tokenizer from_vocab_moved(VocabSpec&& spec);
  std::unique_ptr<Impl> impl_;
};

/// Turns a stream of token ids into printable UTF-8: push() returns complete, valid characters (never
/// half a multi-byte character) and one U+FFFD for each maximal subpart of an invalid sequence as soon
/// as the next byte shows it cannot become a character (Unicode 15 ch. 3 "U+FFFD Substitution of
/// Maximal Subparts", Table 3-8; the WHATWG Encoding Standard's UTF-8 decoder and Python's
/// errors="replace" give the same). Only a valid prefix at the end (at most 3 bytes) is held back, so
/// the concatenated output equals utf8_replace_invalid() of all bytes however they were split.
/// flush() returns the held prefix as U+FFFD. Control tokens print nothing, as in Tokenizer::decode().
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok) : tok_(&tok) {}
  std::string push(int32_t id);
  std::string push_bytes(std::string_view bytes);
  std::string flush();

 private:
  const Tokenizer* tok_;
  std::string pending_;
};

/// Text that is not valid UTF-8 -> dllm::UsageError "<what> is not valid UTF-8: <reason> at byte offset
/// N". Strict: rejects overlong forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
void check_utf8(std::string_view text, std::string_view what = "prompt");

/// Length of the longest prefix of `bytes` made of complete, valid UTF-8 characters.
size_t valid_utf8_prefix(std::string_view bytes);

/// `bytes` with each invalid or truncated UTF-8 sequence replaced by U+FFFD (maximal subparts).
std::string utf8_replace_invalid(std::string_view bytes);

}  // namespace dllm::tokenizer
