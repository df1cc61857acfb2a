// escape_text: every byte class from the header comment, checked on hand-written strings; the
// UTF-8 cases follow RFC 3629 section 4 (well-formed sequences) and Unicode ch. 3 table 3-7.
#include "base/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace dllm {
namespace {

TEST(EscapeText, PrintableAsciiAndValidUtf8StayAsTheyAre) {
  const std::string s = "blk.0.attn_q.weight h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 ~";
  EXPECT_EQ(escape_text(s), s);
  EXPECT_TRUE(is_printable_text(s));
  EXPECT_EQ(escape_text(""), "");
}

TEST(EscapeText, ControlBytes) {
  EXPECT_EQ(escape_text("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(escape_text(std::string("x\x1b[31mred\x07\x7f\0y", 13)), "x\\x1b[31mred\\x07\\x7f\\x00y");
  EXPECT_FALSE(is_printable_text("key\n"));
  EXPECT_FALSE(is_printable_text("\x1b[2J"));
}

TEST(EscapeText, C1ControlsAreEscapedAsCodePoints) {
  // U+009B (CSI) is C2 9B in UTF-8; U+00A0 (no-break space) is the first code point after C1.
  EXPECT_EQ(escape_text("\xc2\x9b"
                        "2J \xc2\x80 \xc2\xa0"),
            "\\u009b2J \\u0080 \xc2\xa0");
  EXPECT_FALSE(is_printable_text("\xc2\x85"));
}

TEST(EscapeText, InvalidUtf8BytesAreEscapedOneByOne) {
  EXPECT_EQ(escape_text("\xff"), "\\xff");
  EXPECT_EQ(escape_text("a\x80z"), "a\\x80z");                                 // lone continuation byte
  EXPECT_EQ(escape_text("\xc0\xaf"), "\\xc0\\xaf");                            // overlong '/'
  EXPECT_EQ(escape_text("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");                   // overlong 3-byte form
  EXPECT_EQ(escape_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");                   // surrogate U+D800
  EXPECT_EQ(escape_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");          // above U+10FFFF
  EXPECT_EQ(escape_text("\xe2\x82"), "\\xe2\\x82");                            // truncated at the end
  EXPECT_EQ(escape_text("\xe2\x82x\xe2\x82\xac"), "\\xe2\\x82x\xe2\x82\xac");  // then a valid one
  EXPECT_FALSE(is_printable_text("ok\xfe"));
}

TEST(EscapeText, BackslashAndQuoteOnlyWhenAsked) {
  EXPECT_EQ(escape_text("a\\b\"c"), "a\\b\"c");
  EXPECT_EQ(escape_text("a\\b\"c", true), "a\\\\b\"c");
  EXPECT_EQ(escape_text("a\\b\"c", true, '"'), "a\\\\b\\\"c");
  EXPECT_TRUE(is_printable_text("a\\b\"c"));
}

}  // namespace
}  // namespace dllm
