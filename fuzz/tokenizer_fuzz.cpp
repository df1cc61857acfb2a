// libFuzzer harness: arbitrary bytes (invalid UTF-8 included) through the byte-level BPE tokenizers
// of the reference models. Input: byte 0 chooses the tokenizer (mod the number loaded) and the
// mode (bit 7); the rest is the text, or in id mode little-endian u16/u32 token ids to decode.
//
// Properties (what tokenizer.h guarantees):
//   - text that is not valid UTF-8 (checked here by an independent RFC 3629 validator) makes
//     encode throw dllm::UsageError; valid text never throws;
//   - every id is in [0, n_tokens());
//   - round trip: the pieces of the ids with control tokens rendered as their text are the input
//     bytes exactly, with and without special parsing; decode() (control tokens skipped) is the
//     input exactly when no control or unknown-type token came out;
//   - StreamDecoder fed the ids one by one, then flushed, prints utf8_replace_invalid(decode(ids)),
//     and mid-stream output is always valid UTF-8 (for the id mode too, where the bytes are
//     arbitrary).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace dllm;

const std::vector<fuzz::NamedTokenizer>& tokenizers() {
  static const std::vector<fuzz::NamedTokenizer> t = fuzz::load_reference_tokenizers();
  return t;
}

void check_stream(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& ids) {
  tokenizer::StreamDecoder sd(tok);
  std::string streamed;
  for (int32_t id : ids) {
    const std::string part = sd.push(id);
    FUZZ_CHECK(fuzz::is_valid_utf8(part), "StreamDecoder::push returned invalid UTF-8");
    streamed += part;
  }
  const std::string tail = sd.flush();
  FUZZ_CHECK(fuzz::is_valid_utf8(tail), "StreamDecoder::flush returned invalid UTF-8");
  streamed += tail;
  FUZZ_CHECK(streamed == tokenizer::utf8_replace_invalid(tok.decode(ids)),
             "streamed text differs from utf8_replace_invalid(decode(ids))");
}

void encode_mode(const tokenizer::Tokenizer& tok, std::string_view text) {
  const bool valid = fuzz::is_valid_utf8(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  for (bool parse_special : {false, true}) {
    std::vector<int32_t> ids;
    try {
      ids = tok.encode(text, parse_special);
    } catch (const UsageError& e) {
      FUZZ_CHECK(!valid, std::string("valid UTF-8 rejected: ") + e.what());
      continue;
    }
    FUZZ_CHECK(valid, "invalid UTF-8 accepted");
    FUZZ_CHECK(text.empty() == ids.empty(), "empty text <=> no ids");
    std::string pieces;
    bool any_skipped = false;
    for (int32_t id : ids) {
      FUZZ_CHECK(id >= 0 && id < tok.n_tokens(), "id out of range");
      pieces += tok.token_to_piece(id, true);
      any_skipped = any_skipped || (tok.attr(id) & (tokenizer::kAttrControl | tokenizer::kAttrUnknown));
    }
    FUZZ_CHECK(pieces == text, "pieces do not give the text back");
    if (!any_skipped) FUZZ_CHECK(tok.decode(ids) == text, "decode does not give the text back");
    check_stream(tok, ids);
  }
}

void id_mode(const tokenizer::Tokenizer& tok, const uint8_t* data, size_t size) {
  // Ids: 3-byte little-endian values v, id = v mod (n_tokens + 17): a few land past the vocabulary,
  // and the last residue stands for -1 (such ids must make decode throw dllm::Error).
  const uint32_t n = static_cast<uint32_t>(tok.n_tokens());
  std::vector<int32_t> ids;
  bool bad = false;
  for (size_t i = 0; i + 2 < size; i += 3) {
    const uint32_t v = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16);
    const uint32_t r = v % (n + 17);
    const int32_t id = r == n + 16 ? -1 : static_cast<int32_t>(r);
    bad = bad || id < 0 || id >= tok.n_tokens();
    ids.push_back(id);
  }
  try {
    (void)tok.decode(ids);
    FUZZ_CHECK(!bad, "decode accepted an id outside the vocabulary");
  } catch (const Error&) {
    FUZZ_CHECK(bad, "decode rejected ids inside the vocabulary");
    return;
  }
  check_stream(tok, ids);
}

}  // namespace

// The vocabularies load once, before the first input (outside libFuzzer's per-input -timeout).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& ts = tokenizers();
  const tokenizer::Tokenizer& tok = *ts[(data[0] & 0x7f) % ts.size()].tok;
  if (data[0] & 0x80) {
    id_mode(tok, data + 1, size - 1);
  } else {
    encode_mode(tok, std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  }
  return 0;
}
