// UTF-8 input checks, U+FFFD replacement, the streaming decoder, and a property test over random
// Unicode strings (all planes, combining marks, whitespace runs; fixed seed) on both reference
// tokenizers: round trip, and no streamed chunk ever holds a partial UTF-8 sequence.
#include <gtest/gtest.h>

#include <random>

#include "tok_fixture.h"

namespace dllm::test {
namespace {

using tokenizer::StreamDecoder;
using tokenizer::Tokenizer;

// Independent validator, straight from RFC 3629 section 4 (UTF8-octets ABNF).
bool rfc3629_valid(std::string_view s) {
  size_t i = 0;
  const auto in = [&](size_t k, int lo, int hi) {
    return k < s.size() && static_cast<uint8_t>(s[k]) >= lo && static_cast<uint8_t>(s[k]) <= hi;
  };
  while (i < s.size()) {
    if (in(i, 0x00, 0x7F)) {
      i += 1;
    } else if (in(i, 0xC2, 0xDF) && in(i + 1, 0x80, 0xBF)) {
      i += 2;
    } else if ((in(i, 0xE0, 0xE0) && in(i + 1, 0xA0, 0xBF) && in(i + 2, 0x80, 0xBF)) ||
               ((in(i, 0xE1, 0xEC) || in(i, 0xEE, 0xEF)) && in(i + 1, 0x80, 0xBF) && in(i + 2, 0x80, 0xBF)) ||
               (in(i, 0xED, 0xED) && in(i + 1, 0x80, 0x9F) && in(i + 2, 0x80, 0xBF))) {
      i += 3;
    } else if ((in(i, 0xF0, 0xF0) && in(i + 1, 0x90, 0xBF)) || (in(i, 0xF1, 0xF3) && in(i + 1, 0x80, 0xBF)) ||
               (in(i, 0xF4, 0xF4) && in(i + 1, 0x80, 0x8F))) {
      if (!in(i + 2, 0x80, 0xBF) || !in(i + 3, 0x80, 0xBF)) return false;
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | cp >> 6), s += char(0x80 | (cp & 63));
  } else if (cp < 0x10000) {
    s += char(0xE0 | cp >> 12), s += char(0x80 | ((cp >> 6) & 63)), s += char(0x80 | (cp & 63));
  } else {
    s += char(0xF0 | cp >> 18), s += char(0x80 | ((cp >> 12) & 63)), s += char(0x80 | ((cp >> 6) & 63)),
        s += char(0x80 | (cp & 63));
  }
  return s;
}

TEST(Utf8, InvalidInputNamesByteOffset) {
  DLLM_REQUIRE_REFERENCE();
  const struct {
    std::string text;
    size_t offset;
  } cases[] = {
      {"ab\xFF"
       "cd",
       2},                      // never a UTF-8 byte
      {"abc\x80", 3},           // lone continuation
      {"x\xC0\xAF", 1},         // overlong '/'
      {"xy\xE0\x80\x80", 2},    // overlong 3-byte
      {"abc\xED\xA0\x80", 3},   // surrogate U+D800
      {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
      {"ok\xE2\x82", 2},        // truncated at the end
      {"\xC3(", 0},             // lead byte without continuation
  };
  for (const auto& c : cases) {
    try {
      dream_tok().encode(c.text, true);
      ADD_FAILURE() << "no error for offset " << c.offset;
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("not valid UTF-8"), std::string::npos) << m;
      EXPECT_NE(m.find("at byte offset " + std::to_string(c.offset)), std::string::npos) << m;
      EXPECT_EQ(e.exit_code(), 2);
    }
    EXPECT_FALSE(rfc3629_valid(c.text));
  }
  EXPECT_TRUE(dream_tok().encode("", true).empty());
  EXPECT_TRUE(llada_tok().encode("", false).empty());
}

// The example of Unicode 15 ch. 3, Table 3-8 (U+FFFD for maximal subparts):
// 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a FFFD FFFD FFFD b FFFD c FFFD FFFD d
TEST(Utf8, ReplacementByMaximalSubparts) {
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(tokenizer::utf8_replace_invalid(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(tokenizer::utf8_replace_invalid("ok"), "ok");
}

TEST(Stream, MultiByteCharacterSplitAcrossTokens) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = dream_tok();
  const std::string text = "\xF0\x9F\xA6\x99 llama \xE4\xB8\xAD";  // 🦙 llama 中
  const auto ids = t.encode(text, false);
  StreamDecoder sd(t);
  std::string out;
  for (int32_t id : ids) {
    const std::string chunk = sd.push(id);
    EXPECT_TRUE(rfc3629_valid(chunk));
    out += chunk;
  }
  out += sd.flush();
  EXPECT_EQ(out, text);
  // Byte-level pieces of the emoji: the first pushes give nothing until the character is complete.
  StreamDecoder bytes(t);
  EXPECT_EQ(bytes.push_bytes("\xF0\x9F"), "");
  EXPECT_EQ(bytes.push_bytes("\xA6"), "");
  EXPECT_EQ(bytes.push_bytes("\x99!"), "\xF0\x9F\xA6\x99!");
}

// A sequence that can no longer become a character is replaced at once and streaming goes on; only a
// tail that may still become a character waits. Table 3-8's bytes pushed one at a time give, chunk by
// chunk, the replacement of the whole string (each U+FFFD as soon as its maximal subpart is known).
TEST(Stream, InvalidBytesReplacedAtOnce) {
  DLLM_REQUIRE_REFERENCE();
  const std::string r = "\xEF\xBF\xBD";
  StreamDecoder sd(dream_tok());
  EXPECT_EQ(sd.push_bytes("ab\xFF"), "ab" + r);  // 0xFF never starts a character
  EXPECT_EQ(sd.push_bytes("cd"), "cd");
  EXPECT_EQ(sd.flush(), "");
  EXPECT_EQ(sd.push_bytes("\xE4\xB8"), "");  // a valid prefix: may still become a character
  EXPECT_EQ(sd.push_bytes("a"), r + "a");    // it did not: one U+FFFD for the two bytes
  EXPECT_EQ(sd.push_bytes("\xE4\xB8"), "");
  EXPECT_EQ(sd.flush(), r);  // truncated at the end of the stream

  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  // After each byte: what Table 3-8's decoding of the bytes so far has made final.
  const std::vector<std::string> want = {"a", "", "", "", r, "", r, r + "b", r, "c", r, r, "d"};
  StreamDecoder bytes(dream_tok());
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(bytes.push_bytes(in.substr(i, 1)), want[i]) << "byte " << i;
  EXPECT_EQ(bytes.flush(), "");
}

std::string random_text(std::mt19937& rng) {
  const auto pick = [&](uint32_t lo, uint32_t hi) { return lo + rng() % (hi - lo + 1); };
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 40);
  for (int i = 0; i < n; ++i) {
    uint32_t cp;
    switch (rng() % 12) {
      case 0:
        cp = pick(0x20, 0x7E);
        break;  // ASCII
      case 1:
        cp = pick(0x300, 0x36F);
        break;   // combining marks
      case 2: {  // whitespace runs
        static const uint32_t ws[] = {' ',  ' ',  '\t',   '\n',   '\r',   0x0B,   0x0C,
                                      0x85, 0xA0, 0x1680, 0x2003, 0x2028, 0x3000, 0x180E};
        const int k = 1 + static_cast<int>(rng() % 6);
        for (int j = 0; j < k; ++j) s += utf8(ws[rng() % std::size(ws)]);
        continue;
      }
      case 3:
        cp = pick(0x4E00, 0x9FFF);
        break;  // CJK
      case 4:
        cp = pick(0x1F300, 0x1FAFF);
        break;  // emoji
      case 5:
        cp = pick(0x10000, 0x10FFFF);
        break;  // supplementary planes 1-16
      case 6:
        cp = pick(0xE0000, 0xE007F);
        break;  // tags (plane 14)
      case 7:
        cp = pick(0x80, 0x7FF);
        break;  // 2-byte
      case 8:
        cp = pick(0x800, 0xFFFF);
        break;  // BMP incl. private use, specials
      case 9:
        cp = pick('0', '9');
        break;
      case 10:
        cp = "'sStTlL<|>"[rng() % 10];
        break;  // contraction / special-token bits
      default:
        cp = pick(0, 0x7F);
        break;  // controls included
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // surrogates are not characters
    s += utf8(cp);
  }
  return s;
}

void property(const Tokenizer& t, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int iter = 0; iter < 400; ++iter) {
    const std::string s = random_text(rng);
    ASSERT_TRUE(rfc3629_valid(s));
    const auto plain = t.encode(s, false);
    ASSERT_EQ(t.decode(plain), s) << "iteration " << iter;
    const auto special = t.encode(s, true);
    std::string rendered;
    for (int32_t id : special) rendered += t.token_to_piece(id, true);
    ASSERT_EQ(rendered, s) << "iteration " << iter;
    for (int32_t id : plain) ASSERT_TRUE(t.is_sampleable(id));
    StreamDecoder sd(t);
    std::string streamed;
    for (int32_t id : plain) {
      const std::string chunk = sd.push(id);
      ASSERT_TRUE(rfc3629_valid(chunk)) << "partial UTF-8 in a streamed chunk, iteration " << iter;
      streamed += chunk;
    }
    streamed += sd.flush();
    ASSERT_EQ(streamed, s);
  }
}

TEST(Property, RandomUnicodeRoundTripDream) {
  DLLM_REQUIRE_REFERENCE();
  property(dream_tok(), 1234);
}
TEST(Property, RandomUnicodeRoundTripLlada) {
  DLLM_REQUIRE_REFERENCE();
  property(llada_tok(), 5678);
}

// Random byte soup through the stream: every chunk valid UTF-8, the concatenation equal to the whole
// string's replacement, and nothing but a possibly incomplete tail held back.
TEST(Property, RandomBytesStream) {
  DLLM_REQUIRE_REFERENCE();
  std::mt19937 rng(99);
  for (int iter = 0; iter < 500; ++iter) {
    StreamDecoder sd(dream_tok());
    std::string all, streamed;
    for (int k = 0; k < 8; ++k) {
      std::string b;
      const int n = static_cast<int>(rng() % 5);
      for (int j = 0; j < n; ++j) b += static_cast<char>(rng() % 256);
      all += b;
      const std::string chunk = sd.push_bytes(b);
      ASSERT_TRUE(rfc3629_valid(chunk));
      streamed += chunk;
    }
    const std::string tail = sd.flush();
    ASSERT_TRUE(rfc3629_valid(tail));
    if (rfc3629_valid(all)) {
      ASSERT_EQ(streamed + tail, all);
    }
    // However the bytes are split, the stream says what the whole string's replacement says.
    ASSERT_EQ(streamed + tail, tokenizer::utf8_replace_invalid(all));
    ASSERT_LE(tail.size(), 3u) << "only an incomplete character's prefix (at most 3 bytes) may wait";
  }
}

// Arbitrary bytes (hostile prompt text): either a UsageError naming an offset or a faithful round trip;
// never a crash. Run under -fsanitize=address,undefined as well (see docs/tokenizer.md).
TEST(Property, RandomBytesEncode) {
  DLLM_REQUIRE_REFERENCE();
  std::mt19937 rng(2024);
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    const int n = static_cast<int>(rng() % 24);
    for (int j = 0; j < n; ++j) s += static_cast<char>(rng() % 4 == 0 ? rng() % 256 : "ab <|>\n'"[rng() % 9]);
    for (const Tokenizer* t : {&dream_tok(), &llada_tok()}) {
      try {
        const auto ids = t->encode(s, false);
        ASSERT_TRUE(rfc3629_valid(s));
        ASSERT_EQ(t->decode(ids), s);
      } catch (const UsageError& e) {
        ASSERT_FALSE(rfc3629_valid(s));
        ASSERT_NE(std::string(e.what()).find("byte offset"), std::string::npos);
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace dllm::test
