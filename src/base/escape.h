// Text from an untrusted file or server made safe to print on one terminal line: control bytes and
// bytes that are not valid UTF-8 become visible escapes, so a GGUF key, tensor name or hub message
// cannot move the cursor, recolour the terminal (ESC sequences) or split an "ERROR:" line.
#pragma once

#include <string>
#include <string_view>

namespace dllm {

/// `s` with these replaced, everything else (printable ASCII, valid UTF-8) kept byte for byte:
///   \n \r \t                       -> "\n" "\r" "\t" (backslash + letter)
///   other C0 bytes and DEL (0x7f)  -> "\x1b" (two lowercase hex digits)
///   C1 controls U+0080..U+009F     -> "\u009b" (8-bit CSI and friends, which some terminals obey)
///   bytes of invalid UTF-8         -> "\xff" each (strict UTF-8, RFC 3629: overlong forms, surrogates,
///                                     code points above U+10FFFF and truncated sequences are invalid)
/// With `escape_backslash`, a backslash becomes "\\" and `quote` ('"', or 0 for none) becomes "\"",
/// so the result reads back unambiguously; without, both stay as they are (error messages).
std::string escape_text(std::string_view s, bool escape_backslash = false, char quote = 0);

/// True when escape_text(s) == s, i.e. nothing in `s` needs escaping (no allocation).
bool is_printable_text(std::string_view s);

}  // namespace dllm
