// libFuzzer harness: a system message and a user message rendered through each built-in chat
// template (LLaDA's Llama-3 headers, Dream's ChatML, LLaDA-MoE's role template, Gemma 4's turns, none)
// `run` does.
//
// Input: byte 0 = flags; the rest split at 0xFF bytes (never part of valid UTF-8) into fields.
//   bits 0-1  tokenizer: 0-2 a reference model's (mod the number loaded), 3 a small byte-level
//             vocabulary built here whose chat template text is the first field (so template
//             detection and ChatML's default-system extraction see arbitrary text)
//   bit 2     a system message is given (the next field)
//   bit 3     --no-chat         bit 4  --no-special (parse_special = false)
//   bit 5     the small vocabulary has add_bos_token   bit 6  it has a BOS id
// The last field is the user message.
//
// Properties: prompt_tokens throws dllm::UsageError exactly when the prompt or system message is
// not valid UTF-8 (independent validator), otherwise returns or throws another dllm::Error (an
// unsupported template, a marker missing from the vocabulary); the ids are in range and start with
// BOS when the tokenizer adds one; their pieces (control tokens rendered) spell render_chat()'s
// text; that text ends with the user turn as the template writes it, with the message trimmed by
// an independent Python str.strip() for LLaDA and Gemma 4 and untouched for ChatML and LLaDA-MoE.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "fuzz_util.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace dllm;

const std::vector<fuzz::NamedTokenizer>& reference() {
  static const std::vector<fuzz::NamedTokenizer> t = fuzz::load_reference_tokenizers();
  return t;
}

/// GPT-2's bytes_to_unicode (openai/gpt-2 src/encoder.py): printable Latin-1 bytes stand for
/// themselves, the other bytes for U+0100 upwards in byte order. As UTF-8 text.
std::string byte_char(int b) {
  const bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  int cp = b;
  if (!self) {
    int n = 0;
    for (int k = 0; k < b; ++k)
      if (!((k >= '!' && k <= '~') || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE && k <= 0xFF))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

const char* const kMarkers[] = {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
                                "<|im_start|>",        "<|im_end|>",        "<|startoftext|>"};

std::unique_ptr<tokenizer::Tokenizer> small_tokenizer(std::string_view chat_template, bool add_bos,
                                                      bool has_bos) {
  tokenizer::VocabSpec spec;
  for (int b = 0; b < 256; ++b) {
    spec.tokens.push_back(byte_char(b));
    spec.token_types.push_back(static_cast<int32_t>(tokenizer::TokenType::NORMAL));
  }
  for (const char* m : kMarkers) {
    spec.tokens.push_back(m);
    spec.token_types.push_back(static_cast<int32_t>(tokenizer::TokenType::CONTROL));
  }
  spec.pre = "qwen2";
  spec.add_bos = add_bos;
  if (has_bos) spec.bos_id = static_cast<int32_t>(spec.tokens.size()) - 1;  // <|startoftext|>
  spec.chat_template = std::string(chat_template);
  return std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_vocab(spec));
}

/// Code points Python's str.isspace() is true for (Unicode White_Space plus U+001C..U+001F): what
/// Jinja's `trim` (str.strip()) removes. From the Unicode PropList.txt White_Space list.
bool python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

/// Code points of valid UTF-8 text with the byte offset where each starts.
std::vector<std::pair<uint32_t, size_t>> code_points(const std::string& s) {
  std::vector<std::pair<uint32_t, size_t>> out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    out.emplace_back(cp, i);
    i += n;
  }
  return out;
}

std::string python_strip(const std::string& s) {
  const auto cps = code_points(s);
  size_t b = 0, e = cps.size();
  while (b < e && python_space(cps[b].first)) ++b;
  while (e > b && python_space(cps[e - 1].first)) --e;
  const size_t from = b < cps.size() ? cps[b].second : s.size();
  const size_t to = e < cps.size() ? cps[e].second : s.size();
  return s.substr(from, to - from);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<std::string> split_fields(const uint8_t* data, size_t size) {
  std::vector<std::string> f(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0xFF) {
      f.emplace_back();
    } else {
      f.back() += static_cast<char>(data[i]);
    }
  }
  return f;
}

}  // namespace

// The vocabularies load once, before the first input (outside libFuzzer's per-input -timeout).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)reference();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<std::string> fields = split_fields(data + 1, size - 1);
  size_t next = 0;
  const auto field = [&]() -> std::string { return next < fields.size() ? fields[next++] : std::string(); };

  std::unique_ptr<tokenizer::Tokenizer> own;
  const tokenizer::Tokenizer* tok;
  if ((flags & 3) == 3) {
    own = small_tokenizer(field(), flags & 0x20, flags & 0x40);
    tok = own.get();
  } else {
    tok = reference()[(flags & 3) % reference().size()].tok.get();
  }
  tokenizer::ChatOptions opts;
  if (flags & 4) opts.system = field();
  opts.no_chat = flags & 8;
  opts.parse_special = !(flags & 16);
  // The user message is everything after the fields used so far (0xFF bytes kept as they are).
  for (size_t k = next; k < fields.size(); ++k) {
    if (k > next) opts.prompt += '\xFF';
    opts.prompt += fields[k];
  }

  const bool valid = fuzz::is_valid_utf8(opts.prompt) && (!opts.system || fuzz::is_valid_utf8(*opts.system));
  std::vector<int32_t> ids;
  try {
    ids = tokenizer::prompt_tokens(*tok, opts);
  } catch (const UsageError& e) {
    FUZZ_CHECK(!valid, std::string("valid text rejected: ") + e.what());
    return 0;
  } catch (const Error&) {
    FUZZ_CHECK(valid, "invalid UTF-8 passed the check");
    return 0;  // unsupported template, marker not in the vocabulary
  }
  FUZZ_CHECK(valid, "invalid UTF-8 accepted");

  size_t start = 0;
  if (tok->add_bos()) {
    FUZZ_CHECK(!ids.empty() && ids[0] == tok->bos_id(), "BOS missing");
    start = 1;
  }
  std::string pieces;
  for (size_t k = 0; k < ids.size(); ++k) {
    FUZZ_CHECK(ids[k] >= 0 && ids[k] < tok->n_tokens(), "id out of range");
    if (k >= start) pieces += tok->token_to_piece(ids[k], true);
  }
  const std::string rendered = tokenizer::render_chat(*tok, opts);
  // A message that starts with the BOS text loses that token (one BOS per prompt).
  const std::string bos_text = tok->bos_id() >= 0 ? tok->token_text(tok->bos_id()) : std::string();
  FUZZ_CHECK(pieces == rendered || (tok->add_bos() && !bos_text.empty() && rendered.rfind(bos_text, 0) == 0 &&
                                    pieces == rendered.substr(bos_text.size())),
             "the ids do not spell the rendered prompt");

  if (opts.no_chat) {
    FUZZ_CHECK(rendered == opts.prompt, "--no-chat changed the prompt");
    return 0;
  }
  switch (tokenizer::detect_chat_template(tok->chat_template())) {
    case tokenizer::ChatTemplateKind::kLlada:
      FUZZ_CHECK(
          ends_with(rendered, "<|start_header_id|>user<|end_header_id|>\n\n" + python_strip(opts.prompt) +
                                  "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"),
          "LLaDA user turn");
      break;
    case tokenizer::ChatTemplateKind::kChatml:
      FUZZ_CHECK(
          ends_with(rendered, "<|im_start|>user\n" + opts.prompt + "<|im_end|>\n<|im_start|>assistant\n"),
          "ChatML user turn");
      break;
    case tokenizer::ChatTemplateKind::kLladaMoe:
      // llama.cpp LLM_CHAT_TEMPLATE_BAILING2: '<role>HUMAN</role>' + content (not trimmed) +
      // '<|role_end|>', then the generation prompt '<role>ASSISTANT</role>'.
      FUZZ_CHECK(
          ends_with(rendered, "<role>HUMAN</role>" + opts.prompt + "<|role_end|><role>ASSISTANT</role>"),
          "LLaDA-MoE user turn");
      break;
    case tokenizer::ChatTemplateKind::kGemma4:
      // Gemma 4's template: '<|turn>user\n' + content | trim + '<turn|>\n', then the generation prompt
      // '<|turn>model\n' with an empty thought channel (src/tokenizer/chat.cpp names the source).
      FUZZ_CHECK(ends_with(rendered, "<|turn>user\n" + python_strip(opts.prompt) +
                                         "<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"),
                 "Gemma 4 user turn");
      break;
    case tokenizer::ChatTemplateKind::kNone:
      FUZZ_CHECK(rendered == opts.prompt, "no template changed the prompt");
      break;
    default:
      FUZZ_CHECK(false, "unknown template kind");
  }
  return 0;
}
