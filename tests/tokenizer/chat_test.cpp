// Chat template: rendered text and prompt ids against what llama-diffusion-cli fed for "What is 2+2?"
// (../shared/reference/logits/chat-prompt-tiny-*.txt and the prompt part of tokens-tiny-*-a.txt, i.e.
// everything before the trailing mask ids; the mask id comes from logits-tiny-*-a.json).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tok_fixture.h"
#include "tokenizer/chat.h"
#include "tokenizer/utf8.h"

namespace dllm::test {
namespace {

using tokenizer::ChatOptions;
using tokenizer::Tokenizer;

std::vector<int32_t> reference_prompt_ids(const std::string& arch) {
  auto ids = parse_ids(read_text(reference("logits/tokens-tiny-" + arch + "-a.txt")));
  const auto j = nlohmann::json::parse(read_text(reference("logits/logits-tiny-" + arch + "-a.json")));
  const int32_t mask = j["mask_token_id"].get<int32_t>();
  while (!ids.empty() && ids.back() == mask) ids.pop_back();
  return ids;
}

void check_reference_prompt(const Tokenizer& tok, const std::string& arch) {
  ChatOptions o;
  o.prompt = "What is 2+2?";
  EXPECT_EQ(tokenizer::render_chat(tok, o), read_text(reference("logits/chat-prompt-tiny-" + arch + ".txt")));
  const auto want = reference_prompt_ids(arch);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(tokenizer::prompt_tokens(tok, o), want);
  // --no-special changes nothing for a prompt without special-token text.
  o.parse_special = false;
  EXPECT_EQ(tokenizer::prompt_tokens(tok, o), want);
}

TEST(Chat, LladaReferencePrompt) {
  DLLM_REQUIRE_REFERENCE();
  check_reference_prompt(llada_tok(), "llada");
}
TEST(Chat, DreamReferencePrompt) {
  DLLM_REQUIRE_REFERENCE();
  check_reference_prompt(dream_tok(), "dream");
}

TEST(Chat, DetectKinds) {
  DLLM_REQUIRE_REFERENCE();
  EXPECT_EQ(tokenizer::detect_chat_template(llada_tok().chat_template()),
            tokenizer::ChatTemplateKind::kLlada);
  EXPECT_EQ(tokenizer::detect_chat_template(dream_tok().chat_template()),
            tokenizer::ChatTemplateKind::kChatml);
  EXPECT_EQ(tokenizer::detect_chat_template(""), tokenizer::ChatTemplateKind::kNone);
  EXPECT_EQ(tokenizer::detect_chat_template(
                "{{ '<role>SYSTEM</role>detailed thinking off<|role_end|>' }}{% for m in messages %}..."),
            tokenizer::ChatTemplateKind::kLladaMoe);
  EXPECT_THROW(tokenizer::detect_chat_template("{{ messages[0]['content'] }}"), Error);
  EXPECT_EQ(tokenizer::chatml_default_system(dream_tok().chat_template()), "You are a helpful assistant.");
  EXPECT_EQ(tokenizer::chatml_default_system("{{ '<|im_start|>' + m + '<|im_end|>' }}"), std::nullopt);
}

// LLaDA-MoE-7B-A1B-Instruct's role format, on the tiny LLaDA vocabulary with the three role markers
// added as control tokens (the real 157k vocabulary is not in ../shared). Expected text as llama.cpp
// src/llama-chat.cpp renders LLM_CHAT_TEMPLATE_BAILING2 for one user message and the generation prompt.
TEST(Chat, LladaMoeRoleFormat) {
  auto file = gguf::GgufFile::open(reference("tiny-llada-q4km.gguf").string());
  auto spec = tokenizer::read_vocab_spec(file);
  const int32_t first = static_cast<int32_t>(spec.tokens.size());
  for (const char* t : {"<role>", "</role>", "<|role_end|>"}) {
    spec.tokens.push_back(t);
    spec.token_types.push_back(3);  // CONTROL
  }
  spec.add_bos = false;
  spec.chat_template =
      "{%- if messages[0]['role'] != 'system' %}{{- '<role>SYSTEM</role>detailed thinking off<|role_end|>' "
      "}}{%- endif %}...<role>HUMAN</role>...<role>ASSISTANT</role>";
  const Tokenizer t = Tokenizer::from_vocab(spec);
  ChatOptions o;
  o.prompt = "What is 2+2?";
  EXPECT_EQ(tokenizer::render_chat(t, o),
            "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>What is 2+2?<|role_end|>"
            "<role>ASSISTANT</role>");
  o.system = "You are a helpful AI assistant";
  EXPECT_EQ(tokenizer::render_chat(t, o),
            "<role>SYSTEM</role>You are a helpful AI assistant<|role_end|><role>HUMAN</role>What is 2+2?"
            "<|role_end|><role>ASSISTANT</role>");
  // The markers are single ids, with and without special parsing of the user's text.
  for (const bool special : {true, false}) {
    o.parse_special = special;
    const auto ids = tokenizer::prompt_tokens(t, o);
    ASSERT_GE(ids.size(), 3u);
    EXPECT_EQ(ids[0], first);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), first + 2), 2) << "two <|role_end|>";
    EXPECT_EQ(ids[ids.size() - 1], first + 1) << "ends with </role> of ASSISTANT";
  }
}

// Exactly one BOS: LLaDA's template writes bos_token and add_bos_token is true.
TEST(Chat, LladaExactlyOneBos) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = llada_tok();
  for (bool special : {true, false}) {
    ChatOptions o;
    o.prompt = "Hi";
    o.parse_special = special;
    const auto ids = tokenizer::prompt_tokens(t, o);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids[0], t.bos_id());
    EXPECT_EQ(std::count(ids.begin(), ids.end(), t.bos_id()), 1);
  }
  // With add_bos_token false, the template's own bos_token text gives the single BOS.
  auto file = gguf::GgufFile::open(reference("tiny-llada-q4km.gguf").string());
  auto spec = tokenizer::read_vocab_spec(file);
  spec.add_bos = false;
  const Tokenizer nobos = Tokenizer::from_vocab(spec);
  for (bool special : {true, false}) {
    ChatOptions o;
    o.prompt = "What is 2+2?";
    o.parse_special = special;
    EXPECT_EQ(tokenizer::prompt_tokens(nobos, o), reference_prompt_ids("llada"));
    EXPECT_EQ(tokenizer::render_chat(nobos, o).rfind("<|startoftext|>", 0), 0u);
  }
  // --no-chat: BOS + the raw prompt.
  ChatOptions raw;
  raw.prompt = "Hello world";
  raw.no_chat = true;
  auto want = t.encode("Hello world", true);
  want.insert(want.begin(), t.bos_id());
  EXPECT_EQ(tokenizer::prompt_tokens(t, raw), want);
  EXPECT_EQ(tokenizer::render_chat(t, raw), "Hello world");
  // A raw prompt that writes the BOS text itself still gets one BOS (llama.cpp would give two).
  raw.prompt = "<|startoftext|>Hello world";
  EXPECT_EQ(tokenizer::prompt_tokens(t, raw), want);
}

TEST(Chat, SystemPromptAndTrim) {
  DLLM_REQUIRE_REFERENCE();
  ChatOptions o;
  o.prompt = "  Hi\n";
  o.system = "Be brief.";
  EXPECT_EQ(tokenizer::render_chat(llada_tok(), o),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(
      tokenizer::render_chat(dream_tok(), o),
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n  Hi\n<|im_end|>\n<|im_start|>assistant\n");
}

// A conversation, rendered as the GGUFs' own templates say (their text is quoted in chat.cpp): LLaDA
// one header block per turn with the content trimmed; Qwen2.5/Dream the leading system turn as the
// system block, then every other turn untrimmed; both end with the assistant header.
TEST(Chat, ConversationWithSystemTurn) {
  ChatOptions o;
  o.messages = {{"system", "Be brief."}, {"user", " Hi "}, {"assistant", "Hello! "}, {"user", "2+2?"}};
  EXPECT_EQ(tokenizer::render_chat(llada_tok(), o),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(tokenizer::render_chat(dream_tok(), o),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n"
            "<|im_start|>assistant\nHello! <|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  // The ids are the rendered text tokenized with special tokens, after LLaDA's one BOS.
  std::vector<int32_t> want = {llada_tok().bos_id()};
  for (int32_t id : llada_tok().encode(tokenizer::render_chat(llada_tok(), o), true)) want.push_back(id);
  EXPECT_EQ(tokenizer::prompt_tokens(llada_tok(), o), want);
  EXPECT_EQ(tokenizer::prompt_tokens(dream_tok(), o),
            dream_tok().encode(tokenizer::render_chat(dream_tok(), o), true));
}

TEST(Chat, ConversationWithoutLeadingSystem) {
  ChatOptions o;
  o.messages = {{"user", "a"}, {"assistant", "b"}, {"system", "late"}, {"user", "c"}};
  EXPECT_EQ(tokenizer::render_chat(llada_tok(), o),
            "<|start_header_id|>user<|end_header_id|>\n\na<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nb<|eot_id|>"
            "<|start_header_id|>system<|end_header_id|>\n\nlate<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nc<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Qwen2.5: the default system block first; a system turn that is not the first is a plain turn.
  EXPECT_EQ(tokenizer::render_chat(dream_tok(), o),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\na<|im_end|>\n"
            "<|im_start|>assistant\nb<|im_end|>\n<|im_start|>system\nlate<|im_end|>\n"
            "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
}

// One user turn (and a system turn) is exactly what run's --prompt (and --system) gives.
TEST(Chat, ConversationOfOneTurnEqualsPrompt) {
  for (const Tokenizer* t : {&llada_tok(), &dream_tok()}) {
    ChatOptions flags;
    flags.prompt = "What is 2+2?";
    ChatOptions conv;
    conv.messages = {{"user", "What is 2+2?"}};
    EXPECT_EQ(tokenizer::prompt_tokens(*t, conv), tokenizer::prompt_tokens(*t, flags));
    flags.system = "Be brief.";
    conv.messages.insert(conv.messages.begin(), {"system", "Be brief."});
    EXPECT_EQ(tokenizer::prompt_tokens(*t, conv), tokenizer::prompt_tokens(*t, flags));
  }
}

TEST(Chat, InvalidUtf8MessageNamesTheMessage) {
  ChatOptions o;
  o.messages = {{"user", "fine"}, {"assistant", "bad\xFF"}};
  try {
    tokenizer::prompt_tokens(dream_tok(), o);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("messages[1].content is not valid UTF-8"), std::string::npos)
        << e.what();
  }
}

TEST(Chat, EmptyPromptStillTemplated) {
  DLLM_REQUIRE_REFERENCE();
  ChatOptions o;
  const auto ids = tokenizer::prompt_tokens(dream_tok(), o);
  EXPECT_EQ(tokenizer::render_chat(dream_tok(), o),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(ids, dream_tok().encode(tokenizer::render_chat(dream_tok(), o), true));
  EXPECT_FALSE(tokenizer::prompt_tokens(llada_tok(), o).empty());
}

// --no-special: special-token text typed by the user stays text; the template's markers stay tokens.
TEST(Chat, NoSpecialKeepsUserTextLiteral) {
  DLLM_REQUIRE_REFERENCE();
  const Tokenizer& t = dream_tok();
  ChatOptions o;
  o.prompt = "say <|im_end|> now";
  const int32_t im_end = t.find_token("<|im_end|>");
  o.parse_special = true;
  const auto parsed = tokenizer::prompt_tokens(t, o);
  EXPECT_EQ(std::count(parsed.begin(), parsed.end(), im_end), 3);
  o.parse_special = false;
  const auto ids = tokenizer::prompt_tokens(t, o);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), im_end), 2);
  std::string rendered;
  for (int32_t id : ids) rendered += t.token_to_piece(id);
  EXPECT_EQ(rendered, tokenizer::render_chat(t, o));
}

TEST(Chat, InvalidUtf8PromptNamesOffset) {
  DLLM_REQUIRE_REFERENCE();
  ChatOptions o;
  o.prompt = "ok\xC3(";
  try {
    tokenizer::prompt_tokens(dream_tok(), o);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("prompt is not valid UTF-8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("byte offset 2"), std::string::npos) << e.what();
  }
}

TEST(Chat, ContextCheckNamesBothLengths) {
  EXPECT_NO_THROW(tokenizer::check_context(4096, 4096));
  try {
    tokenizer::check_context(5000, 4096);
    FAIL();
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("5000"), std::string::npos) << m;
    EXPECT_NE(m.find("4096"), std::string::npos) << m;
    EXPECT_EQ(e.exit_code(), 2);
  }
}

// Invalid UTF-8 in the template's own text (here its default system prompt) is a problem of the file:
// dllm::Error with exit code 1 naming the template, not the usage error a typed prompt gets.
TEST(Chat, InvalidUtf8InTheTemplateIsAFileError) {
  tokenizer::VocabSpec s;
  s.pre = "qwen2";
  const auto& bu = tokenizer::byte_unicode_map();
  for (int b = 0; b < 256; ++b) s.tokens.push_back(bu.byte_to_utf8[b]);
  s.tokens.push_back("<|im_start|>");
  s.tokens.push_back("<|im_end|>");
  s.token_types.assign(256, static_cast<int32_t>(tokenizer::TokenType::NORMAL));
  s.token_types.resize(258, static_cast<int32_t>(tokenizer::TokenType::CONTROL));
  s.chat_template = "{{- '<|im_start|>system\\nYou are \xff\xfe.<|im_end|>\\n' }}";
  const Tokenizer t = Tokenizer::from_vocab(s);
  ASSERT_EQ(tokenizer::chatml_default_system(t.chat_template()), "You are \xff\xfe.");
  for (bool special : {true, false}) {
    ChatOptions o;
    o.prompt = "Hi";
    o.parse_special = special;
    try {
      (void)tokenizer::prompt_tokens(t, o);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitFailure) << e.what();
      EXPECT_NE(std::string(e.what()).find("the chat template of this model file is not valid UTF-8"),
                std::string::npos)
          << e.what();
    }
    o.system = "Be brief.";  // a system prompt given replaces the template's: no error
    EXPECT_NO_THROW((void)tokenizer::prompt_tokens(t, o));
  }
}

}  // namespace
}  // namespace dllm::test
