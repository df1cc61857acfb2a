// Internal UTF-8 helpers of the tokenizer and the GPT-2 byte <-> unicode table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace dllm::tokenizer {

/// One step of strict UTF-8 decoding at byte i (i < s.size()).
/// kOk: a character of `len` bytes, code point `cp`. kInvalid: the maximal invalid subpart is `len`
/// bytes (>= 1). kTruncated: a valid prefix of `len` bytes reaches the end of s (more bytes may come).
struct Utf8Step {
  enum Status { kOk, kInvalid, kTruncated } status;
  int len;
  uint32_t cp;
};
Utf8Step utf8_step(std::string_view s, size_t i);

void append_utf8(std::string& out, uint32_t cp);

/// GPT-2's bytes_to_unicode() table, both ways. byte_to_utf8[b] is the UTF-8 text of the code point
/// that stands for byte b in vocabulary strings; cp_to_byte[cp] is b or -1 (cp < 324).
struct ByteUnicodeMap {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<std::string, 256> byte_to_utf8{};
  std::array<int16_t, 324> cp_to_byte = [] {
    std::array<int16_t, 324> a{};
    a.fill(-1);
    return a;
  }();
};
const ByteUnicodeMap& byte_unicode_map();

}  // namespace dllm::tokenizer
