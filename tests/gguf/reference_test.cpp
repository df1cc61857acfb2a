// The reader on llama.cpp's files: ../shared/reference/tiny-{llada,dream}-q4km.gguf against the
// tables of ../shared/reference/README.md ("GGUF contents"), parsed here at run time (the numbers
// are never copied into this file). The tables were made by tools/describe_gguf.py (gguf-py), an
// independent reader.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/inspect.h"
#include "test_util.h"

namespace dllm::gguf {
namespace {

struct KeyRow {
  std::string key, type, value;
};
struct TensorRow {
  int index;
  std::string name, type;
  std::vector<int64_t> ne;
  uint64_t bytes, offset;
};
struct TokenRow {
  uint32_t id;
  std::string text, type;
};

/// The README section "### `<file>`": header line, key table, token tables, tensor table, type mix.
struct Section {
  uint64_t file_size = 0, data_offset = 0, alignment = 0;
  uint32_t version = 0;
  size_t n_keys = 0, n_tensors = 0;
  std::vector<KeyRow> keys;
  std::vector<TensorRow> tensors;
  std::vector<TokenRow> special_tokens;
  std::map<std::string, uint64_t> token_type_counts;
  std::map<std::string, std::pair<uint64_t, uint64_t>> type_mix;  // type -> (tensors, bytes)
  bool found = false;
};

/// Markdown table cells write '|' as a backslash and '|'.
std::string unescape_md(const std::string& s) {
  std::string out;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\\' && k + 1 < s.size() && s[k + 1] == '|') continue;
    out += s[k];
  }
  return out;
}

Section parse_readme(const std::string& file) {
  std::ifstream in(test::reference("README.md"));
  Section sec;
  std::string line;
  bool inside = false;
  const std::regex header(
      R"(^- file size: (\d+) bytes; GGUF version (\d+), (\d+) metadata keys, (\d+) tensors, data alignment (\d+), tensor data starts at byte (\d+))");
  const std::regex key_row(R"(^\| `([^`]+)` \| ([A-Z0-9_\[\]]+) \| (.*) \|$)");
  const std::regex tensor_row(R"(^\| (\d+) \| `([^`]+)` \| (\w+) \| \[([0-9, ]+)\] \| (\d+) \| (\d+) \|$)");
  const std::regex token_row(R"(^\| (\d+) \| `(.+)` \| ([A-Z_]+) \|$)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0 || line.rfind("## ", 0) == 0) {
      inside = line == "### `" + file + "`";
      sec.found |= inside;
      continue;
    }
    if (!inside) continue;
    if (std::regex_search(line, m, header)) {
      sec.file_size = std::stoull(m[1]);
      sec.version = static_cast<uint32_t>(std::stoul(m[2]));
      sec.n_keys = std::stoul(m[3]);
      sec.n_tensors = std::stoul(m[4]);
      sec.alignment = std::stoull(m[5]);
      sec.data_offset = std::stoull(m[6]);
    } else if (std::regex_match(line, m, tensor_row)) {
      TensorRow t{std::stoi(m[1]), m[2], m[3], {}, std::stoull(m[5]), std::stoull(m[6])};
      std::stringstream ss(m[4]);
      for (std::string d; std::getline(ss, d, ',');) t.ne.push_back(std::stoll(d));
      sec.tensors.push_back(t);
    } else if (std::regex_match(line, m, token_row)) {
      sec.special_tokens.push_back({static_cast<uint32_t>(std::stoul(m[1])), unescape_md(m[2]), m[3]});
    } else if (std::regex_match(line, m, key_row)) {
      sec.keys.push_back({m[1], m[2], m[3]});
    } else if (line.rfind("Token types: ", 0) == 0) {
      const std::regex pair(R"(([A-Z_]+)=(\d+))");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), pair); it != std::sregex_iterator(); ++it)
        sec.token_type_counts[(*it)[1]] = std::stoull((*it)[2]);
    } else if (line.rfind("Type mix: ", 0) == 0) {
      const std::regex mix(R"((\w+): (\d+) tensors / (\d+) bytes)");
      for (auto it = std::sregex_iterator(line.begin(), line.end(), mix); it != std::sregex_iterator(); ++it)
        sec.type_mix[(*it)[1]] = {std::stoull((*it)[2]), std::stoull((*it)[3])};
    }
  }
  return sec;
}

/// gguf-py's token type ids (gguf/constants.py TokenType).
std::string token_type_name(int32_t t) {
  switch (t) {
    case 1:
      return "NORMAL";
    case 2:
      return "UNKNOWN";
    case 3:
      return "CONTROL";
    case 4:
      return "USER_DEFINED";
    case 5:
      return "UNUSED";
    case 6:
      return "BYTE";
    default:
      return "type" + std::to_string(t);
  }
}

std::string type_string(const Value& v) {
  if (v.type == ValueType::ARRAY) return std::string("ARRAY[") + value_type_name(v.elem_type) + "]";
  return value_type_name(v.type);
}

void check_value(const KeyRow& row, const Value& v) {
  SCOPED_TRACE(row.key + " = " + row.value);
  EXPECT_EQ(type_string(v), row.type);
  std::smatch m;
  if (v.type == ValueType::UINT32 || v.type == ValueType::UINT64) {
    EXPECT_EQ(std::to_string(v.u), row.value);
  } else if (v.type == ValueType::INT32) {
    EXPECT_EQ(std::to_string(v.i), row.value);
  } else if (v.type == ValueType::FLOAT32) {
    EXPECT_EQ(static_cast<float>(v.f), static_cast<float>(std::stod(row.value)));
  } else if (v.type == ValueType::BOOL) {
    EXPECT_EQ(v.u ? "true" : "false", row.value);
  } else if (v.type == ValueType::STRING) {
    static const std::regex long_string(R"(^(\d+) bytes, sha256 )");
    if (std::regex_search(row.value, m, long_string)) {
      EXPECT_EQ(v.s.size(), std::stoull(m[1]));
    } else {
      EXPECT_EQ(nlohmann::json(v.s).dump(), row.value);  // the table shows JSON-quoted strings
    }
  } else if (v.type == ValueType::ARRAY) {
    // "<n> items: [a, b, c, ...]": the count and the first items (JSON once the "..." is dropped).
    static const std::regex items(R"(^(\d+) items: \[(.*), \.\.\.\]$)");
    ASSERT_TRUE(std::regex_match(row.value, m, items));
    EXPECT_EQ(v.items.size(), std::stoull(m[1]));
    const nlohmann::json first = nlohmann::json::parse("[" + m[2].str() + "]");
    ASSERT_LE(first.size(), v.items.size());
    for (size_t k = 0; k < first.size(); ++k) {
      if (v.elem_type == ValueType::STRING) {
        EXPECT_EQ(v.items[k].s, first[k].get<std::string>()) << k;
      } else if (v.elem_type == ValueType::INT32) {
        EXPECT_EQ(v.items[k].i, first[k].get<int64_t>()) << k;
      }
    }
  } else {
    ADD_FAILURE() << "type not in the README tables: " << row.type;
  }
}

void check_reference(const std::string& file) {
  const Section sec = parse_readme(file);
  ASSERT_TRUE(sec.found) << "no section for " << file << " in README.md";
  ASSERT_GT(sec.file_size, 0u) << "header line not parsed";
  ASSERT_EQ(sec.keys.size(), sec.n_keys) << "key table rows";
  ASSERT_EQ(sec.tensors.size(), sec.n_tensors) << "tensor table rows";

  const GgufFile f = GgufFile::open(test::reference(file).string());
  EXPECT_EQ(f.file_size(), sec.file_size);
  EXPECT_EQ(f.version(), sec.version);
  EXPECT_EQ(f.alignment(), sec.alignment);
  EXPECT_EQ(f.data_offset(), sec.data_offset);

  ASSERT_EQ(f.metadata().size(), sec.n_keys);
  for (size_t k = 0; k < sec.keys.size(); ++k) {
    EXPECT_EQ(f.metadata()[k].key, sec.keys[k].key) << "key order at " << k;
    const Value* v = f.find(sec.keys[k].key);
    ASSERT_NE(v, nullptr) << sec.keys[k].key;
    check_value(sec.keys[k], *v);
  }

  // Tensor directory: order, name, type, ne, bytes, absolute offset.
  ASSERT_EQ(f.tensors().size(), sec.n_tensors);
  for (const TensorRow& row : sec.tensors) {
    SCOPED_TRACE(row.name);
    const TensorInfo& t = f.tensors()[static_cast<size_t>(row.index)];
    EXPECT_EQ(t.name, row.name);
    EXPECT_EQ(type_name(t.type), row.type);
    ASSERT_EQ(t.n_dims, row.ne.size());
    for (size_t d = 0; d < row.ne.size(); ++d) EXPECT_EQ(t.ne[d], row.ne[d]) << "ne[" << d << "]";
    EXPECT_EQ(t.n_bytes, row.bytes);
    EXPECT_EQ(f.data_offset() + t.offset, row.offset);
    EXPECT_EQ(f.find_tensor(row.name), &t);
  }

  // Per-type counts and bytes.
  std::map<std::string, std::pair<uint64_t, uint64_t>> mix;
  for (const TensorInfo& t : f.tensors()) {
    auto& e = mix[type_name(t.type)];
    ++e.first;
    e.second += t.n_bytes;
  }
  EXPECT_EQ(mix, sec.type_mix);

  // Tokens: counts per type and the special-token table.
  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
  const std::vector<int32_t> types = f.get_i32_array("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), types.size());
  std::map<std::string, uint64_t> counts;
  for (int32_t t : types) ++counts[token_type_name(t)];
  EXPECT_EQ(counts, sec.token_type_counts);
  ASSERT_FALSE(sec.special_tokens.empty());
  for (const TokenRow& row : sec.special_tokens) {
    ASSERT_LT(row.id, tokens.size());
    EXPECT_EQ(tokens[row.id], row.text) << row.id;
    EXPECT_EQ(token_type_name(types[row.id]), row.type) << row.id;
  }

  // inspect prints every tensor and key of a real file.
  std::ostringstream out;
  print_inspect(f, out);
  for (const TensorRow& row : sec.tensors) EXPECT_NE(out.str().find(row.name), std::string::npos) << row.name;
  for (const KeyRow& row : sec.keys) EXPECT_NE(out.str().find(row.key), std::string::npos) << row.key;
}

TEST(GgufReference, TinyLlada) {
  DLLM_REQUIRE_REFERENCE();
  check_reference("tiny-llada-q4km.gguf");
}
TEST(GgufReference, TinyDream) {
  DLLM_REQUIRE_REFERENCE();
  check_reference("tiny-dream-q4km.gguf");
}

}  // namespace
}  // namespace dllm::gguf
