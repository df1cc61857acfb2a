// Chat templates rendered by hand for the two template families the diffusion models ship.
// LLaDA-8B-Instruct tokenizer_config.json chat_template:
//   bos_token + per message '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + content|trim +
//   '<|eot_id|>', then always '<|start_header_id|>assistant<|end_header_id|>\n\n'.
// Dream-v0-Instruct-7B (Qwen2.5) chat_template without tools:
//   '<|im_start|>system\n' + (messages[0].content if it is a system turn, else the default) +
//   '<|im_end|>\n', then per message that is a user turn, an assistant turn or a system turn other
//   than the first '<|im_start|>' + role + '\n' + content + '<|im_end|>\n', generation prompt
//   '<|im_start|>assistant\n'.
// LLaDA-MoE-7B-A1B-Instruct (the Ling 2.0 role format, as llama.cpp src/llama-chat.cpp renders
// LLM_CHAT_TEMPLATE_BAILING2, the template it recognises by "<role>ASSISTANT</role>", "<role>HUMAN</role>"
// and "<|role_end|>"; inclusionAI/dInfer benchmarks/benchmark.py feeds LLaDA-MoE-7B-A1B-Instruct the same
// text): '<role>SYSTEM</role>' + (system or 'detailed thinking off') + '<|role_end|>', per message
// '<role>' + ROLE + '</role>' + content + '<|role_end|>' (user is HUMAN, other roles upper-cased),
// generation prompt '<role>ASSISTANT</role>'.
// Gemma 4 "-it" (and DiffusionGemma, whose GGUFs carry the same turn markers): bos_token, then
// '<|turn>system\n' + content|trim + '<turn|>\n' when the first turn is a system (or developer) turn,
// per other message '<|turn>' + role ('model' for assistant) + '\n' + content|trim + '<turn|>\n',
// generation prompt '<|turn>model\n<|channel>thought\n<channel|>' (an empty thought: no thinking).
#include "tokenizer/chat.h"

#include <string>

#include "base/error.h"

namespace dllm::tokenizer {

namespace {

// One piece of the rendered prompt: a template marker that must be a single token (special), the
// template's plain text, or user text (prompt / system), which parse_special=false keeps literal.
struct Segment {
  enum Kind { kMarker, kTemplateText, kUserText } kind;
  std::string text;
};

// Python str.strip() whitespace (what Jinja's `trim` filter removes): Unicode White_Space plus the
// ASCII information separators 0x1C..0x1F.
size_t ws_len_at(std::string_view s, size_t i) {
  const auto u = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = u(i);
  if ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) return 1;
  if (c == 0xC2 && i + 1 < s.size() && (u(i + 1) == 0x85 || u(i + 1) == 0xA0)) return 2;
  if (i + 2 < s.size()) {
    const uint32_t cp =
        (static_cast<uint32_t>(c & 0x0F) << 12) | ((u(i + 1) & 0x3F) << 6) | (u(i + 2) & 0x3F);
    if ((c & 0xF0) == 0xE0 && (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
                               cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)) {
      return 3;
    }
  }
  return 0;
}

std::string jinja_trim(std::string_view s) {
  size_t b = 0;
  while (b < s.size()) {
    const size_t w = ws_len_at(s, b);
    if (!w) break;
    b += w;
  }
  size_t e = s.size();
  while (e > b) {
    // find the start of the last character and test it
    size_t k = e - 1;
    while (k > b && (static_cast<uint8_t>(s[k]) & 0xC0) == 0x80) --k;
    const size_t w = ws_len_at(s, k);
    if (!w || k + w != e) break;
    e = k;
  }
  return std::string(s.substr(b, e - b));
}

// The turns to render: o.messages, or [system if given] + [user prompt].
std::vector<ChatMessage> conversation(const ChatOptions& o) {
  if (!o.messages.empty()) return o.messages;
  std::vector<ChatMessage> turns;
  if (o.system) turns.push_back({"system", *o.system});
  turns.push_back({"user", o.prompt});
  return turns;
}

std::vector<Segment> render_segments(const Tokenizer& tok, const ChatOptions& o) {
  std::vector<Segment> seg;
  if (o.no_chat) {
    // Raw text: the prompt, or a conversation's contents one after another (as without a template).
    if (o.messages.empty()) {
      seg.push_back({Segment::kUserText, o.prompt});
    } else {
      for (const ChatMessage& m : o.messages) seg.push_back({Segment::kUserText, m.content});
    }
    return seg;
  }
  const std::vector<ChatMessage> turns = conversation(o);
  const ChatTemplateKind kind = detect_chat_template(tok.chat_template());
  switch (kind) {
    case ChatTemplateKind::kNone:
      // No template: the prompt as is, or a conversation's contents one after another.
      if (o.messages.empty()) {
        seg.push_back({Segment::kUserText, o.prompt});
      } else {
        for (const ChatMessage& m : turns) seg.push_back({Segment::kUserText, m.content});
      }
      break;
    case ChatTemplateKind::kLlada: {
      // The template writes bos_token first. When the tokenizer adds BOS itself (add_bos_token true),
      // llama.cpp's chat code drops that leading BOS text so the prompt has one BOS (reference README
      // "Double BOS"); prompt_tokens() then prepends the id.
      if (!tok.add_bos() && tok.bos_id() >= 0)
        seg.push_back({Segment::kMarker, tok.token_text(tok.bos_id())});
      const auto message = [&](const std::string& role, const std::string& content) {
        seg.push_back({Segment::kMarker, "<|start_header_id|>"});
        seg.push_back({Segment::kTemplateText, role});
        seg.push_back({Segment::kMarker, "<|end_header_id|>"});
        seg.push_back({Segment::kTemplateText, "\n\n"});
        seg.push_back({Segment::kUserText, jinja_trim(content)});
        seg.push_back({Segment::kMarker, "<|eot_id|>"});
      };
      for (const ChatMessage& m : turns) message(m.role, m.content);
      seg.push_back({Segment::kMarker, "<|start_header_id|>"});
      seg.push_back({Segment::kTemplateText, "assistant"});
      seg.push_back({Segment::kMarker, "<|end_header_id|>"});
      seg.push_back({Segment::kTemplateText, "\n\n"});
      break;
    }
    case ChatTemplateKind::kChatml: {
      const auto message = [&](const std::string& role, const std::string& content, bool user_text) {
        seg.push_back({Segment::kMarker, "<|im_start|>"});
        seg.push_back({Segment::kTemplateText, role + "\n"});
        seg.push_back({user_text ? Segment::kUserText : Segment::kTemplateText, content});
        seg.push_back({Segment::kMarker, "<|im_end|>"});
        seg.push_back({Segment::kTemplateText, "\n"});
      };
      const bool leading_system = !turns.empty() && turns[0].role == "system";
      if (leading_system) {
        message("system", turns[0].content, true);
      } else if (auto def = chatml_default_system(tok.chat_template())) {
        message("system", *def, false);
      }
      for (size_t i = leading_system ? 1 : 0; i < turns.size(); ++i)
        message(turns[i].role, turns[i].content, true);
      seg.push_back({Segment::kMarker, "<|im_start|>"});
      seg.push_back({Segment::kTemplateText, "assistant\n"});
      break;
    }
    case ChatTemplateKind::kLladaMoe: {
      const auto message = [&](const std::string& role, const std::string& content, bool user_text) {
        seg.push_back({Segment::kMarker, "<role>"});
        seg.push_back({Segment::kTemplateText, role});
        seg.push_back({Segment::kMarker, "</role>"});
        seg.push_back({user_text ? Segment::kUserText : Segment::kTemplateText, content});
        seg.push_back({Segment::kMarker, "<|role_end|>"});
      };
      // user is HUMAN, every other role upper-cased (system -> SYSTEM, assistant -> ASSISTANT).
      const auto role_name = [](const std::string& role) {
        if (role == "user") return std::string("HUMAN");
        std::string up = role;
        for (char& c : up) c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
        return up;
      };
      const bool leading_system = !turns.empty() && turns[0].role == "system";
      if (!leading_system) message("SYSTEM", "detailed thinking off", false);
      for (const ChatMessage& m : turns) message(role_name(m.role), m.content, true);
      seg.push_back({Segment::kMarker, "<role>"});
      seg.push_back({Segment::kTemplateText, "ASSISTANT"});
      seg.push_back({Segment::kMarker, "</role>"});
      break;
    }
    case ChatTemplateKind::kGemma4: {
      // bos_token first: dropped when the tokenizer adds BOS itself (as llama.cpp does; kLlada).
      if (!tok.add_bos() && tok.bos_id() >= 0)
        seg.push_back({Segment::kMarker, tok.token_text(tok.bos_id())});
      const auto message = [&](const std::string& role, const std::string& content) {
        seg.push_back({Segment::kMarker, "<|turn>"});
        seg.push_back({Segment::kTemplateText, role + "\n"});
        seg.push_back({Segment::kUserText, jinja_trim(content)});
        seg.push_back({Segment::kMarker, "<turn|>"});
        seg.push_back({Segment::kTemplateText, "\n"});
      };
      size_t i = 0;
      if (!turns.empty() && (turns[0].role == "system" || turns[0].role == "developer")) {
        message("system", turns[0].content);
        i = 1;
      }
      for (; i < turns.size(); ++i)
        message(turns[i].role == "assistant" ? "model" : turns[i].role, turns[i].content);
      seg.push_back({Segment::kMarker, "<|turn>"});
      seg.push_back({Segment::kTemplateText, "model\n"});
      seg.push_back({Segment::kMarker, "<|channel>"});
      seg.push_back({Segment::kTemplateText, "thought\n"});
      seg.push_back({Segment::kMarker, "<channel|>"});
      break;
    }
    case ChatTemplateKind::kSentinel:
      break;
  }
  return seg;
}

}  // namespace

const char* chat_template_kind_name(ChatTemplateKind k) {
  switch (k) {
    case ChatTemplateKind::kNone:
      return "none";
    case ChatTemplateKind::kLlada:
      return "llada";
    case ChatTemplateKind::kChatml:
      return "chatml";
    case ChatTemplateKind::kLladaMoe:
      return "llada-moe";
    case ChatTemplateKind::kGemma4:
      return "gemma4";
    case ChatTemplateKind::kSentinel:
      break;
  }
  return "?";
}

ChatTemplateKind detect_chat_template(std::string_view t) {
  if (t.empty()) return ChatTemplateKind::kNone;
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ChatTemplateKind::kLlada;
  if (t.find("<|im_start|>") != std::string_view::npos) return ChatTemplateKind::kChatml;
  if (t.find("<role>") != std::string_view::npos && t.find("<|role_end|>") != std::string_view::npos)
    return ChatTemplateKind::kLladaMoe;
  if (t.find("<|turn>") != std::string_view::npos) return ChatTemplateKind::kGemma4;
  throw Error(
      "unsupported chat template in tokenizer.chat_template (neither LLaDA <|start_header_id|>, ChatML "
      "<|im_start|>, LLaDA-MoE <role>...<|role_end|> nor Gemma <|turn> style); run with --no-chat and write "
      "the template into the prompt");
}

std::optional<std::string> chatml_default_system(std::string_view t) {
  // Qwen2.5/Dream: {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
  const std::string_view open = "<|im_start|>system\\n";
  for (size_t p = t.find(open); p != std::string_view::npos; p = t.find(open, p + 1)) {
    const size_t b = p + open.size();
    const size_t e = t.find("<|im_end|>", b);
    if (e == std::string_view::npos) break;
    const std::string_view body = t.substr(b, e - b);
    // A literal only: no Jinja expression, no string concatenation, no quote.
    if (body.find_first_of("{}'\"+\\") == std::string_view::npos) return std::string(body);
  }
  return std::nullopt;
}

// A prompt typed with its own BOS text (--no-chat "<|startoftext|>...") would give two BOS when the
// tokenizer adds one; llama.cpp keeps both with a warning, we keep one: the model never saw two.
static std::vector<int32_t> drop_second_bos(const Tokenizer& tok, std::vector<int32_t> ids) {
  if (tok.add_bos() && ids.size() >= 2 && ids[1] == tok.bos_id()) ids.erase(ids.begin() + 1);
  return ids;
}

std::string render_chat(const Tokenizer& tok, const ChatOptions& opts) {
  std::string out;
  for (const Segment& s : render_segments(tok, opts)) out += s.text;
  return out;
}

std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const ChatOptions& opts) {
  check_utf8(opts.prompt, "prompt");
  if (opts.system) check_utf8(*opts.system, "system prompt");
  for (size_t i = 0; i < opts.messages.size(); ++i) {
    check_utf8(opts.messages[i].content, "messages[" + std::to_string(i) + "].content");
  }
  const std::vector<Segment> segs = render_segments(tok, opts);
  // The user's text was checked above, so invalid UTF-8 found while encoding comes from the model
  // file (the template's default system prompt, the BOS token's text): an error of the file (exit 1),
  // not a usage error.
  const auto encode = [&](const std::string& text, bool special) {
    try {
      return tok.encode(text, special);
    } catch (const UsageError& e) {
      throw Error(std::string("the chat template of this model file is not valid UTF-8 (the rendered ") +
                  e.what() + "): run with --no-chat, or give a system prompt with --system");
    }
  };
  std::vector<int32_t> ids;
  if (tok.add_bos()) {
    if (tok.bos_id() < 0)
      throw Error("tokenizer.ggml.add_bos_token is true but the file has no BOS token id");
    ids.push_back(tok.bos_id());
  }
  if (opts.parse_special) {
    // Exactly what llama.cpp does: tokenize the whole rendered text with special tokens parsed.
    std::string text;
    for (const Segment& s : segs) text += s.text;
    const auto t = encode(text, true);
    ids.insert(ids.end(), t.begin(), t.end());
    return drop_second_bos(tok, std::move(ids));
  }
  // Markers become their ids; the text between two markers is tokenized as one piece without special
  // parsing, so word boundaries match what the whole-text tokenization would give.
  std::string run;
  const auto flush = [&] {
    if (run.empty()) return;
    const auto t = encode(run, false);
    ids.insert(ids.end(), t.begin(), t.end());
    run.clear();
  };
  for (const Segment& s : segs) {
    if (s.kind == Segment::kMarker) {
      flush();
      const int32_t id = tok.find_token(s.text);
      if (id < 0)
        throw Error("chat template marker " + s.text + " is not a token of this vocabulary; use --no-chat");
      ids.push_back(id);
    } else {
      run += s.text;
    }
  }
  flush();
  return drop_second_bos(tok, std::move(ids));
}

void check_context(size_t n_tokens, size_t n_ctx, std::string_view what) {
  if (n_tokens > n_ctx) {
    throw UsageError(std::string(what) + " is " + std::to_string(n_tokens) +
                     " tokens, longer than the model context of " + std::to_string(n_ctx) +
                     " tokens; shorten it (or lower --max-tokens)");
  }
}

}  // namespace dllm::tokenizer
