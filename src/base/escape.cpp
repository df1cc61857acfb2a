// escape_text: see escape.h. The UTF-8 rules are RFC 3629 section 4 (the byte ranges of each
// well-formed sequence), the same as tokenizer/utf8.cpp's strict decoder.
#include "base/escape.h"

#include <cstdint>
#include <cstdio>

namespace dllm {

namespace {

/// Length of the valid UTF-8 character at s[i] (1..4), or 0 when the bytes there are not one.
size_t utf8_char_len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong 3-byte forms
    if (c == 0xED) hi = 0x9F;  // no surrogates U+D800..U+DFFF
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong 4-byte forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // 0x80..0xC1 (continuation or overlong lead) and 0xF5..0xFF never start a character
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

bool is_c1(std::string_view s, size_t i, size_t len) {
  return len == 2 && static_cast<uint8_t>(s[i]) == 0xC2 && static_cast<uint8_t>(s[i + 1]) < 0xA0;
}

}  // namespace

std::string escape_text(std::string_view s, bool escape_backslash, char quote) {
  std::string out;
  out.reserve(s.size());
  char buf[8];
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    const size_t len = utf8_char_len(s, i);
    if (len == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
      continue;
    }
    if (is_c1(s, i, len)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<uint8_t>(s[i + 1])));
      out += buf;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (escape_backslash && (c == '\\' || (quote != 0 && c == static_cast<uint8_t>(quote)))) {
      out += '\\';
      out += static_cast<char>(c);
    } else {
      out.append(s, i, len);
    }
    i += len;
  }
  return out;
}

bool is_printable_text(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const uint8_t c = static_cast<uint8_t>(s[i]);
    const size_t len = utf8_char_len(s, i);
    if (len == 0 || is_c1(s, i, len) || c < 0x20 || c == 0x7f) return false;
    i += len;
  }
  return true;
}

}  // namespace dllm
