// Chat templates for the diffusion models: the prompt text a user types (or a conversation of
// system/user/assistant turns, `dllm serve`) becomes the token ids the model was tuned on. We do not
// run Jinja: the template kind is recognised from the GGUF's tokenizer.chat_template text and rendered
// by hand, the way llama.cpp's llama-diffusion-cli feeds it (common_chat_templates_apply with the
// messages and add_generation_prompt, then tokenize with add_special = true, parse_special = true).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace dllm::tokenizer {

enum class ChatTemplateKind {
  kNone = 0,    ///< no tokenizer.chat_template in the file: the prompt is used as is
  kLlada = 1,   ///< Llama-3 style headers (<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>), LLaDA
  kChatml = 2,  ///< <|im_start|>role\n...<|im_end|>\n, Dream (Qwen2.5 template)
  /// <role>ROLE</role>...<|role_end|>, LLaDA-MoE-7B-A1B-Instruct (the Ling 2.0 "bailing2" format)
  kLladaMoe = 3,
  /// <|turn>role\n...<turn|>\n, Gemma 4 and DiffusionGemma (assistant is "model"; the generation
  /// prompt opens an empty thought channel)
  kGemma4 = 4,
  kSentinel = 5,
};

/// "none", "llada", "chatml", "llada-moe", "gemma4".
const char* chat_template_kind_name(ChatTemplateKind k);

/// Recognises the template from its text: contains "<|start_header_id|>" -> kLlada, "<|im_start|>" ->
/// kChatml, "<role>" and "<|role_end|>" -> kLladaMoe, "<|turn>" -> kGemma4, empty -> kNone. Any other
/// template -> dllm::Error naming the problem and suggesting --no-chat.
ChatTemplateKind detect_chat_template(std::string_view template_text);

/// The ChatML template's built-in system prompt (Dream: "You are a helpful assistant."), taken from the
/// literal '<|im_start|>system\n...<|im_end|>' in the template text; nullopt when it has none.
std::optional<std::string> chatml_default_system(std::string_view template_text);

/// One turn of a conversation. `role` is "system", "user" or "assistant" (the templates render any
/// role text as given; the server accepts only these three).
struct ChatMessage {
  std::string role;
  std::string content;
};

struct ChatOptions {
  /// The conversation, in order. When non-empty it replaces `prompt` and `system` (a leading "system"
  /// turn is the system message; without one, ChatML's default system prompt applies).
  std::vector<ChatMessage> messages;
  std::string prompt;                 ///< user message (may be empty: the template still applies)
  std::optional<std::string> system;  ///< --system; nullopt = the template's default (Dream) or none
  bool no_chat =
      false;  ///< --no-chat: the prompt text (or the messages' contents in order) as is, no template
  bool parse_special = true;  ///< false (--no-special): special-token texts in prompt/system are
                              ///< plain text; the template's own markers stay special tokens
};

/// The prompt text after the template, as llama.cpp renders it: when add_bos() is true the template's
/// leading BOS text (LLaDA writes bos_token) is not part of it, since prompt_tokens() adds the BOS id.
/// LLaDA trims the message content (Jinja `| trim`), ChatML does not. Equals
/// what llama.cpp's chat code renders for the same turns (tests/tokenizer/chat_test.cpp checks it). A
/// conversation renders every turn in order, then the generation prompt: LLaDA one header block per turn;
/// ChatML the first turn as the system block when it is a system turn (else the default one), then every
/// user, assistant and later system turn (Qwen2.5's template without tools).
std::string render_chat(const Tokenizer& tok, const ChatOptions& opts);

/// The ids fed to the model: [BOS if add_bos()] + tokens of render_chat(). Exactly one BOS at the start
/// when add_bos() is true (also when a --no-chat prompt starts with the BOS text), none added otherwise. With
/// parse_special the whole rendered text is tokenized at once (identical to llama.cpp); without it, the
/// template markers are inserted as ids and the text between them is tokenized with parse_special = false.
/// Throws dllm::UsageError for a prompt, system or message text that is not valid UTF-8 (byte offset
/// named; a message is named "messages[i].content"), and dllm::Error (exit 1) when text from the file
/// (the template's default system prompt) is not.
std::vector<int32_t> prompt_tokens(const Tokenizer& tok, const ChatOptions& opts);

/// A sequence longer than the model context -> dllm::UsageError
/// "<what> is <n_tokens> tokens, longer than the model context of <n_ctx> tokens; ...".
/// The CLI calls it with the prompt alone and with the whole canvas (prompt + max tokens).
void check_context(size_t n_tokens, size_t n_ctx, std::string_view what = "prompt");

}  // namespace dllm::tokenizer
