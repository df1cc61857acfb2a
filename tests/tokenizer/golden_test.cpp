// The tokenizer against llama.cpp: the golden strings (llama-tokenize on the reference GGUFs) and
// llama.cpp's own vocabulary test vectors. Expected ids are read from ../shared at run time.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tok_fixture.h"

namespace dllm::test {
namespace {

using nlohmann::json;
using tokenizer::Tokenizer;

std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

std::vector<json> read_jsonl(const std::filesystem::path& p) {
  std::vector<json> rows;
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty()) rows.push_back(json::parse(line));
  }
  return rows;
}

void check_golden(const Tokenizer& tok, const std::string& arch) {
  const auto rows = read_jsonl(reference("tokenizer/golden-tiny-" + arch + "-public.jsonl"));
  ASSERT_GE(rows.size(), 32u);
  for (const json& r : rows) {
    const std::string text = r["text"];
    SCOPED_TRACE(arch + " golden string " + std::to_string(r["index"].get<int>()) + " (" +
                 r["category"].get<std::string>() + ")");
    const std::vector<int32_t> want_special = r["ids_parse_special"], want_plain = r["ids_plain"];
    const auto got_special = tok.encode(text, true);
    const auto got_plain = tok.encode(text, false);
    EXPECT_EQ(got_special, want_special);
    EXPECT_EQ(got_plain, want_plain);
    // Pieces byte for byte (control tokens rendered as their text, like llama-tokenize prints them).
    const std::vector<std::string> pieces_special = r["pieces_parse_special_hex"],
                                   pieces_plain = r["pieces_plain_hex"];
    if (got_special.size() == pieces_special.size()) {
      for (size_t i = 0; i < got_special.size(); ++i) {
        EXPECT_EQ(tok.token_to_piece(got_special[i]), from_hex(pieces_special[i])) << "piece " << i;
      }
    }
    if (got_plain.size() == pieces_plain.size()) {
      for (size_t i = 0; i < got_plain.size(); ++i) {
        EXPECT_EQ(tok.token_to_piece(got_plain[i]), from_hex(pieces_plain[i])) << "piece " << i;
      }
    }
    // Round trips: plain ids decode to the text; with special parsing the rendered pieces do.
    EXPECT_EQ(tok.decode(got_plain), text);
    std::string rendered;
    for (int32_t id : got_special) rendered += tok.token_to_piece(id, true);
    EXPECT_EQ(rendered, text);
  }
}

TEST(Golden, LladaPublicIdForId) {
  DLLM_REQUIRE_REFERENCE();
  check_golden(llada_tok(), "llada");
}
TEST(Golden, DreamPublicIdForId) {
  DLLM_REQUIRE_REFERENCE();
  check_golden(dream_tok(), "dream");
}

// .meta.json: golden ids carry no BOS; with the model's add_bos_token the caller prepends bos_token_id.
void check_meta(const Tokenizer& tok, const std::string& arch) {
  const json meta = json::parse(read_text(reference("tokenizer/golden-tiny-" + arch + ".meta.json")));
  EXPECT_EQ(tok.add_bos(), meta["add_bos_token"].get<bool>());
  EXPECT_EQ(tok.bos_id(), meta["bos_token_id"].get<int32_t>());
  EXPECT_EQ(tok.pre(), meta["tokenizer_pre"].get<std::string>());
  std::vector<int32_t> ids = tok.encode("Hello world", true);
  EXPECT_EQ(ids, meta["hello_world_no_bos"].get<std::vector<int32_t>>());
  if (tok.add_bos()) ids.insert(ids.begin(), tok.bos_id());
  EXPECT_EQ(ids, meta["hello_world_default_flags"].get<std::vector<int32_t>>());
}
TEST(Golden, LladaMetaBos) {
  DLLM_REQUIRE_REFERENCE();
  check_meta(llada_tok(), "llada");
}
TEST(Golden, DreamMetaBos) {
  DLLM_REQUIRE_REFERENCE();
  check_meta(dream_tok(), "dream");
}

// llama.cpp tests/test-tokenizer-0: texts separated by "\n__ggml_vocab_test__\n", one line of ids per
// text; run with add_special = false, parse_special = false.
void check_vectors(const Tokenizer& tok, const std::string& stem) {
  const std::string inp = read_text(reference("tokenizer/vectors/" + stem + ".inp"));
  const std::string out = read_text(reference("tokenizer/vectors/" + stem + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t e = inp.find(sep, pos);
    if (e == std::string::npos) break;
    texts.push_back(inp.substr(pos, e - pos));
    pos = e + sep.size();
  }
  std::vector<std::string> lines;
  std::istringstream os(out);
  for (std::string l; std::getline(os, l);) lines.push_back(l);
  ASSERT_EQ(texts.size(), lines.size());
  ASSERT_GE(texts.size(), 40u);
  int passed = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto got = tok.encode(texts[i], false);
    const auto want = parse_ids(lines[i]);
    EXPECT_EQ(got, want) << stem << " case " << i << ": \"" << texts[i] << "\"";
    passed += got == want;
    EXPECT_EQ(tok.decode(got), texts[i]) << stem << " round trip, case " << i;
  }
  std::printf("%s: %d / %zu vectors pass\n", stem.c_str(), passed, texts.size());
}

TEST(Vectors, Gpt2VocabFile) {
  DLLM_REQUIRE_REFERENCE();
  auto file = gguf::GgufFile::open(reference("tokenizer/vectors/ggml-vocab-gpt-2.gguf").string());
  const Tokenizer tok = Tokenizer::from_gguf(file);
  EXPECT_EQ(tok.pre(), "gpt-2");
  check_vectors(tok, "ggml-vocab-gpt-2.gguf");
}

// tiny-dream carries the real Qwen2 vocabulary (reference README: 46/46 with llama-tokenize).
TEST(Vectors, Qwen2OnTinyDream) {
  DLLM_REQUIRE_REFERENCE();
  check_vectors(dream_tok(), "ggml-vocab-qwen2.gguf");
}

}  // namespace
}  // namespace dllm::test
