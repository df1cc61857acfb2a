// print_inspect on a synthetic file: the header, each key's type and value (arrays summarized,
// long strings cut with their byte count), counts per type, and one line per tensor.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/inspect.h"
#include "gguf/writer.h"
#include "test_util.h"

namespace dllm::gguf {
namespace {

/// The line of `out` that contains `needle` ("" when none).
std::string line_with(const std::string& out, const std::string& needle) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

TEST(GgufInspect, PrintsHeaderMetadataTypesAndTensors) {
  test::TempDir dir;
  const std::string path = (dir / "i.gguf").string();
  GgufWriter w(2);
  w.add_string("general.architecture", "someArch");
  w.add_u32("x.count", 7);
  w.add_i8("x.neg", -3);
  w.add_f32("x.eps", 1e-5f);
  w.add_bool("x.flag", false);
  w.add_string("x.long", std::string(100, 'a') + "\n");
  w.add_string_array("x.tokens", {"<s>", "a\"b", "c", "d", "e", "f", "g", "h"});
  w.add_i32_array("x.one", {42});
  w.add_value("x.nested",
              make_array(ValueType::ARRAY, {make_array(ValueType::INT32, {make_i32(1), make_i32(2)})}));
  std::vector<uint8_t> q4(2 * 144, 0), q6(210, 0);
  std::vector<float> f(512, 1.0f);
  w.add_tensor("blk.0.attn_q.weight", GgmlType::Q4_K, {256, 2}, q4.data(), q4.size());
  w.add_tensor("blk.0.ffn_down.weight", GgmlType::Q6_K, {256}, q6.data(), q6.size());
  w.add_tensor("norm", GgmlType::F32, {512}, f.data(), f.size() * 4);
  w.add_tensor("norm2", GgmlType::F32, {8, 4, 2, 2}, f.data(), 128 * 4);
  w.write(path);
  const GgufFile file = GgufFile::open(path);
  std::ostringstream os;
  print_inspect(file, os);
  const std::string out = os.str();

  EXPECT_NE(out.find("file: " + path), std::string::npos) << out;
  EXPECT_NE(out.find("GGUF version: 2"), std::string::npos);
  EXPECT_NE(out.find("alignment: 32"), std::string::npos);
  EXPECT_NE(out.find("tensor data offset: " + std::to_string(file.data_offset())), std::string::npos);
  EXPECT_NE(out.find("metadata: 9 keys"), std::string::npos);

  EXPECT_NE(line_with(out, "general.architecture").find("STRING"), std::string::npos);
  EXPECT_NE(line_with(out, "general.architecture").find("\"someArch\""), std::string::npos);
  EXPECT_NE(line_with(out, "x.count").find("UINT32"), std::string::npos);
  EXPECT_NE(line_with(out, "x.count").find(" 7"), std::string::npos);
  EXPECT_NE(line_with(out, "x.neg").find("INT8"), std::string::npos);
  EXPECT_NE(line_with(out, "x.neg").find("-3"), std::string::npos);
  EXPECT_NE(line_with(out, "x.eps").find("1e-05"), std::string::npos) << line_with(out, "x.eps");
  EXPECT_NE(line_with(out, "x.flag").find("false"), std::string::npos);
  // Long string: first 64 bytes, then its size; the newline is escaped, not printed.
  const std::string long_line = line_with(out, "x.long");
  EXPECT_NE(long_line.find("\"" + std::string(64, 'a') + "\"... (101 bytes)"), std::string::npos)
      << long_line;
  const std::string tokens = line_with(out, "x.tokens");
  EXPECT_NE(tokens.find("ARRAY[STRING]"), std::string::npos) << tokens;
  EXPECT_NE(tokens.find("8 items: [\"<s>\", \"a\\\"b\", \"c\", \"d\", \"e\", \"f\", ...]"), std::string::npos)
      << tokens;
  EXPECT_NE(line_with(out, "x.one").find("1 item: [42]"), std::string::npos) << line_with(out, "x.one");
  EXPECT_NE(line_with(out, "x.nested").find("ARRAY[ARRAY[INT32]]"), std::string::npos)
      << line_with(out, "x.nested");
  EXPECT_NE(line_with(out, "x.nested").find("1 item: [[2 items: [1, 2]]]"), std::string::npos);

  // Per type: count and bytes, ordered by type id; then the total.
  const std::string f32 = line_with(out, "  F32 ");
  EXPECT_NE(f32.find("2 tensors"), std::string::npos) << f32;
  EXPECT_NE(f32.find(std::to_string(512 * 4 + 128 * 4) + " bytes"), std::string::npos) << f32;
  EXPECT_NE(line_with(out, "  Q4_K ").find("1 tensors"), std::string::npos);
  EXPECT_NE(line_with(out, "  Q4_K ").find("288 bytes"), std::string::npos);
  EXPECT_NE(line_with(out, "  Q6_K ").find("210 bytes"), std::string::npos);
  EXPECT_NE(line_with(out, "  total ").find("4 tensors"), std::string::npos);

  const std::string q = line_with(out, "blk.0.attn_q.weight");
  EXPECT_NE(q.find("Q4_K"), std::string::npos) << q;
  EXPECT_NE(q.find("[256, 2]"), std::string::npos) << q;
  EXPECT_NE(q.find("288 bytes at offset " + std::to_string(file.data_offset())), std::string::npos) << q;
  EXPECT_NE(line_with(out, "norm2").find("[8, 4, 2, 2]"), std::string::npos) << line_with(out, "norm2");
  EXPECT_NE(line_with(out, "blk.0.ffn_down.weight").find("[256]"), std::string::npos);
}

TEST(GgufInspect, FormatValueCutsAtAUtf8Boundary) {
  // 63 ASCII bytes then a 2-byte character: cutting at 64 would split it, so 63 are shown.
  const std::string s = std::string(63, 'x') + "\xc3\xa9" + "tail";
  EXPECT_EQ(format_value(make_string(s)), "\"" + std::string(63, 'x') + "\"... (69 bytes)");
  EXPECT_EQ(format_value(make_string("a\tb\x01")), "\"a\\tb\\x01\"");
  EXPECT_EQ(format_value(make_f64(0.1)), "0.1");  // shortest round trip
  EXPECT_EQ(format_value(make_f32(1e-5f)), "1e-05");
  EXPECT_EQ(format_value(make_f64(1.0 / 3)), "0.3333333333333333");
  EXPECT_EQ(format_value(make_u64(18446744073709551615ull)), "18446744073709551615");
  EXPECT_EQ(format_value(make_array(ValueType::UINT8, {})), "0 items: []");
}

}  // namespace
}  // namespace dllm::gguf
