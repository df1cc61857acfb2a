// libFuzzer harness: arbitrary bytes as a GGUF file, through everything a downloaded file meets
// before the first forward pass: GgufFile (header, metadata, tensor directory, bounds), the
// `inspect` printer, Model::load (config keys, tensor names, shapes, types, norm decoding), and the
// tokenizer and chat prompt built from the same file.
//
// Properties: every rejection is a dllm::Error (any other exception escapes and libFuzzer reports
// it; a huge allocation is reported by ASan / -malloc_limit_mb); an opened file's tensors lie inside
// the bytes; inspect prints one escaped line per item (no raw control bytes, valid UTF-8); every
// token id the tokenizer knows is a row of the loaded model's embedding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "base/error.h"
#include "fuzz_util.h"
#include "gguf/gguf.h"
#include "gguf/inspect.h"
#include "model/model.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace dllm;

void check_inspect_output(const gguf::GgufFile& file) {
  std::ostringstream os;
  gguf::print_inspect(file, os);
  const std::string out = os.str();
  FUZZ_CHECK(fuzz::is_valid_utf8(out), "inspect printed invalid UTF-8");
  for (unsigned char c : out) {
    FUZZ_CHECK(c == '\n' || (c >= 0x20 && c != 0x7f), "inspect printed a raw control byte");
  }
  // One line per item: 5 header lines, blank, "metadata:" + one per key, blank, "tensor types:" +
  // one per type + total, blank, "tensors:" + one per tensor.
  size_t lines = 0;
  for (char c : out) lines += c == '\n';
  size_t n_types = 0;
  {
    bool seen[64] = {};
    for (const auto& t : file.tensors()) {
      const auto id = static_cast<uint32_t>(t.type);
      if (id < 64 && !seen[id]) seen[id] = true, ++n_types;
    }
  }
  FUZZ_CHECK(lines == 5 + 2 + file.metadata().size() + 2 + n_types + 1 + 2 + file.tensors().size(),
             "inspect printed " + std::to_string(lines) + " lines");
}

void check_tensors_inside(const gguf::GgufFile& file, const uint8_t* data, size_t size) {
  for (const auto& t : file.tensors()) {
    const uint8_t* p = file.tensor_data(t);
    FUZZ_CHECK(p >= data && t.n_bytes <= size && static_cast<size_t>(p - data) <= size - t.n_bytes,
               "tensor " + t.name + " lies outside the file");
    FUZZ_CHECK(t.n_dims <= 4, "n_dims");
    int64_t n = 1;
    for (int d = 0; d < 4; ++d) {
      FUZZ_CHECK(t.ne[d] > 0, "non-positive dimension");
      FUZZ_CHECK(!__builtin_mul_overflow(n, t.ne[d], &n), "element count overflows");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<gguf::GgufFile> file;
  try {
    file = std::make_unique<gguf::GgufFile>(gguf::GgufFile::from_memory(data, size, "fuzz.gguf"));
  } catch (const Error&) {
    return 0;
  }
  check_tensors_inside(*file, data, size);
  check_inspect_output(*file);

  std::unique_ptr<model::Model> model;
  try {
    model = std::make_unique<model::Model>(model::Model::load(*file));
    FUZZ_CHECK(model->n_vocab_embd() > 0 && model->config().n_vocab > 0, "empty vocabulary");
  } catch (const Error&) {
  }
  try {
    const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(*file);
    if (model) {
      FUZZ_CHECK(tok.n_tokens() <= model->n_vocab_embd(), std::to_string(tok.n_tokens()) + " tokens but " +
                                                              std::to_string(model->n_vocab_embd()) +
                                                              " embedding rows");
    }
    tokenizer::ChatOptions chat;
    chat.prompt = "Hello, <|im_end|> world 123";
    for (int32_t id : tokenizer::prompt_tokens(tok, chat)) {
      FUZZ_CHECK(id >= 0 && id < tok.n_tokens(), "prompt token id out of range");
    }
  } catch (const Error&) {
  }
  return 0;
}
