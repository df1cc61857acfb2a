// Strict UTF-8 validation and U+FFFD replacement (Unicode 15 ch. 3, Table 3-7 "Well-Formed UTF-8 Byte
// Sequences"; replacement by maximal subparts as in ch. 3 "U+FFFD Substitution of Maximal Subparts",
// which is also what Python's bytes.decode(errors="replace") does).
#include <cstdio>
#include <string>

#include "base/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace dllm::tokenizer {

Utf8Step utf8_step(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const size_t n = s.size();
  const uint8_t c = b(i);
  if (c < 0x80) return {Utf8Step::kOk, 1, c};
  int len = 0;
  uint32_t cp = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Table 3-7)
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;  // no overlongs
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;  // no overlongs
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Step::kInvalid, 1, 0};  // 0x80..0xC1, 0xF5..0xFF never start a character
  }
  for (int k = 1; k < len; ++k) {
    if (i + k >= n) return {Utf8Step::kTruncated, k, 0};
    const uint8_t x = b(i + k);
    const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (x < l || x > h) return {Utf8Step::kInvalid, k, 0};
    cp = (cp << 6) | (x & 0x3F);
  }
  return {Utf8Step::kOk, len, cp};
}

void check_utf8(std::string_view text, std::string_view what) {
  size_t i = 0;
  while (i < text.size()) {
    const Utf8Step st = utf8_step(text, i);
    if (st.status != Utf8Step::kOk) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s sequence starting with byte 0x%02X at byte offset %zu",
                    st.status == Utf8Step::kTruncated ? "truncated" : "invalid",
                    static_cast<uint8_t>(text[i]), i);
      throw UsageError(std::string(what) + " is not valid UTF-8: " + buf);
    }
    i += st.len;
  }
}

size_t valid_utf8_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const Utf8Step st = utf8_step(bytes, i);
    if (st.status != Utf8Step::kOk) break;
    i += st.len;
  }
  return i;
}

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const Utf8Step st = utf8_step(bytes, i);
    if (st.status == Utf8Step::kOk) {
      out.append(bytes.substr(i, st.len));
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for the maximal subpart (st.len bytes, at least 1)
    }
    i += st.len;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

const ByteUnicodeMap& byte_unicode_map() {
  // GPT-2 encoder.py bytes_to_unicode(): printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') map to
  // themselves; the other 68 bytes map, in byte order, to U+0100, U+0101, ...
  static const ByteUnicodeMap map = [] {
    ByteUnicodeMap m;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      m.byte_to_cp[b] = cp;
      std::string s;
      append_utf8(s, cp);
      m.byte_to_utf8[b] = s;
      m.cp_to_byte[cp] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

}  // namespace dllm::tokenizer
