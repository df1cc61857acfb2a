// GGUF reader and writer tests. Files are built byte by byte here (class Raw, written from the
// format description in ggml/docs/gguf.md, independent of src/gguf/writer.cpp), read back, and
// corrupted; the writer is checked byte-for-byte against the hand-built files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "test_util.h"

namespace dllm::gguf {
namespace {

using test::TempDir;

// ---- A hand-written GGUF byte builder -----------------------------------------------------------

struct Raw {
  std::vector<uint8_t> b;

  template <typename T>
  Raw& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Raw& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Raw& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    put<uint32_t>(0x46554747u);  // "GGUF" as little-endian bytes
    put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    return *this;
  }
  Raw& kv_u32(const std::string& key, uint32_t v) { return str(key).put<uint32_t>(4).put<uint32_t>(v); }
  Raw& kv_str(const std::string& key, const std::string& v) { return str(key).put<uint32_t>(8).str(v); }
  Raw& tensor(const std::string& name, std::vector<int64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) put<int64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Raw& pad(size_t alignment) {
    while (b.size() % alignment) b.push_back(0);
    return *this;
  }
  Raw& fill(size_t n, uint8_t v) {
    b.insert(b.end(), n, v);
    return *this;
  }
};

void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

/// Opens `bytes` as a file and returns the dllm::Error message (fails the test if it opens).
std::string open_error(const std::vector<uint8_t>& bytes) {
  TempDir dir;
  const std::string path = (dir / "bad.gguf").string();
  write_bytes(path, bytes);
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message does not start with the path: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message is not one line: " << msg;
    EXPECT_EQ(e.exit_code(), kExitFailure);
    return msg;
  }
  ADD_FAILURE() << "file opened without error";
  return "";
}

#define EXPECT_ERROR_HAS(bytes, ...)                                                          \
  do {                                                                                        \
    const std::string msg_ = open_error(bytes);                                               \
    for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})                    \
      EXPECT_NE(msg_.find(part_), std::string::npos) << "'" << part_ << "' not in: " << msg_; \
  } while (0)

// ---- The valid file with every value type ------------------------------------------------------

// Value type ids from ggml/docs/gguf.md.
enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 };

constexpr uint32_t kF32 = 0, kQ4_K = 12;

/// Every value type, nested arrays, an empty array, a non-default alignment (64) and two tensors
/// (F32 [4, 2] and Q4_K [256, 2]) with distinct data bytes.
Raw every_type_file(uint32_t version) {
  Raw r;
  r.header(version, 2, 18);
  r.str("t.u8").put<uint32_t>(U8).put<uint8_t>(200);
  r.str("t.i8").put<uint32_t>(I8).put<int8_t>(-100);
  r.str("t.u16").put<uint32_t>(U16).put<uint16_t>(60000);
  r.str("t.i16").put<uint32_t>(I16).put<int16_t>(-30000);
  r.str("t.u32").put<uint32_t>(U32).put<uint32_t>(4000000000u);
  r.str("t.i32").put<uint32_t>(I32).put<int32_t>(-2000000000);
  r.str("t.f32").put<uint32_t>(F32).put<float>(1.5e-5f);
  r.str("t.bool").put<uint32_t>(BOOL).put<uint8_t>(1);
  r.str("t.str").put<uint32_t>(STR).str("h\xc3\xa9llo\n");
  r.str("t.u64").put<uint32_t>(U64).put<uint64_t>(0xfedcba9876543210ull);
  r.str("t.i64").put<uint32_t>(I64).put<int64_t>(-0x123456789abcdefll);
  r.str("t.f64").put<uint32_t>(F64).put<double>(-2.25e300);
  r.str("t.arr_str").put<uint32_t>(ARR).put<uint32_t>(STR).put<uint64_t>(3).str("a").str("").str("ccc");
  r.str("t.arr_i32").put<uint32_t>(ARR).put<uint32_t>(I32).put<uint64_t>(2).put<int32_t>(-7).put<int32_t>(9);
  r.str("t.arr_empty").put<uint32_t>(ARR).put<uint32_t>(F32).put<uint64_t>(0);
  // [[1, 2, 3], [], [4]] as INT32, and [["x"], ["y", "z"]] as STRING.
  r.str("t.nested").put<uint32_t>(ARR).put<uint32_t>(ARR).put<uint64_t>(3);
  r.put<uint32_t>(I32).put<uint64_t>(3).put<int32_t>(1).put<int32_t>(2).put<int32_t>(3);
  r.put<uint32_t>(I32).put<uint64_t>(0);
  r.put<uint32_t>(I32).put<uint64_t>(1).put<int32_t>(4);
  r.str("t.nested_str").put<uint32_t>(ARR).put<uint32_t>(ARR).put<uint64_t>(2);
  r.put<uint32_t>(STR).put<uint64_t>(1).str("x");
  r.put<uint32_t>(STR).put<uint64_t>(2).str("y").str("z");
  r.str("general.alignment").put<uint32_t>(U32).put<uint32_t>(64);
  // F32 [4, 2] = 32 bytes at 0; Q4_K [256, 2] = 288 bytes at 64 (aligned to 64).
  r.tensor("a.weight", {4, 2}, kF32, 0);
  r.tensor("b.weight", {256, 2}, kQ4_K, 64);
  r.pad(64);
  for (int k = 0; k < 8; ++k) r.put<float>(static_cast<float>(k) + 0.5f);
  r.fill(32, 0);
  for (int k = 0; k < 288; ++k) r.put<uint8_t>(static_cast<uint8_t>(k * 7 + 1));
  return r;
}

void check_every_type(const GgufFile& f, uint32_t version) {
  EXPECT_EQ(f.version(), version);
  EXPECT_EQ(f.alignment(), 64u);
  ASSERT_EQ(f.metadata().size(), 18u);
  EXPECT_EQ(f.metadata()[0].key, "t.u8");
  EXPECT_EQ(f.metadata()[17].key, "general.alignment");
  EXPECT_EQ(f.find("t.u8")->type, ValueType::UINT8);
  EXPECT_EQ(f.find("t.u8")->u, 200u);
  EXPECT_EQ(f.find("t.i8")->type, ValueType::INT8);
  EXPECT_EQ(f.find("t.i8")->i, -100);
  EXPECT_EQ(f.find("t.u16")->u, 60000u);
  EXPECT_EQ(f.find("t.i16")->i, -30000);
  EXPECT_EQ(f.find("t.u32")->u, 4000000000u);
  EXPECT_EQ(f.find("t.i32")->i, -2000000000);
  EXPECT_EQ(f.find("t.f32")->type, ValueType::FLOAT32);
  EXPECT_EQ(static_cast<float>(f.find("t.f32")->f), 1.5e-5f);
  EXPECT_EQ(f.find("t.bool")->type, ValueType::BOOL);
  EXPECT_TRUE(f.get_bool("t.bool"));
  EXPECT_EQ(f.get_string("t.str"), "h\xc3\xa9llo\n");
  EXPECT_EQ(f.find("t.u64")->u, 0xfedcba9876543210ull);
  EXPECT_EQ(f.find("t.i64")->i, -0x123456789abcdefll);
  EXPECT_EQ(f.find("t.f64")->type, ValueType::FLOAT64);
  EXPECT_EQ(f.find("t.f64")->f, -2.25e300);
  EXPECT_EQ(f.get_string_array("t.arr_str"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f.get_i32_array("t.arr_i32"), (std::vector<int32_t>{-7, 9}));
  const Value* empty = f.find("t.arr_empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->type, ValueType::ARRAY);
  EXPECT_EQ(empty->elem_type, ValueType::FLOAT32);
  EXPECT_TRUE(empty->items.empty());

  const Value* nested = f.find("t.nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->elem_type, ValueType::ARRAY);
  ASSERT_EQ(nested->items.size(), 3u);
  EXPECT_EQ(nested->items[0].elem_type, ValueType::INT32);
  ASSERT_EQ(nested->items[0].items.size(), 3u);
  EXPECT_EQ(nested->items[0].items[2].i, 3);
  EXPECT_TRUE(nested->items[1].items.empty());
  ASSERT_EQ(nested->items[2].items.size(), 1u);
  EXPECT_EQ(nested->items[2].items[0].i, 4);
  const Value* nested_str = f.find("t.nested_str");
  ASSERT_NE(nested_str, nullptr);
  ASSERT_EQ(nested_str->items.size(), 2u);
  EXPECT_EQ(nested_str->items[1].items[1].s, "z");

  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorInfo* a = f.find_tensor("a.weight");
  const TensorInfo* b = f.find_tensor("b.weight");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f.find_tensor("c.weight"), nullptr);
  EXPECT_EQ(a->n_dims, 2u);
  EXPECT_EQ(a->ne[0], 4);
  EXPECT_EQ(a->ne[1], 2);
  EXPECT_EQ(a->ne[2], 1);
  EXPECT_EQ(a->type, GgmlType::F32);
  EXPECT_EQ(a->n_bytes, 32u);
  EXPECT_EQ(a->row_bytes(), 16u);
  EXPECT_EQ(a->n_elements(), 8);
  EXPECT_EQ(b->type, GgmlType::Q4_K);
  EXPECT_EQ(b->offset, 64u);
  EXPECT_EQ(b->n_bytes, 288u);
  EXPECT_EQ(b->row_bytes(), 144u);
  EXPECT_EQ(f.data_offset() % 64, 0u);
  EXPECT_EQ(f.file_size(), f.data_offset() + 64 + 288);
  float x[8];
  std::memcpy(x, f.tensor_data(*a), sizeof x);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(x[k], static_cast<float>(k) + 0.5f);
  const uint8_t* q = f.tensor_data(*b);
  for (int k = 0; k < 288; ++k) ASSERT_EQ(q[k], static_cast<uint8_t>(k * 7 + 1)) << k;
}

TEST(GgufReader, EveryValueTypeV3) {
  TempDir dir;
  write_bytes(dir / "v3.gguf", every_type_file(3).b);
  check_every_type(GgufFile::open((dir / "v3.gguf").string()), 3);
}

TEST(GgufReader, EveryValueTypeV2) {
  TempDir dir;
  write_bytes(dir / "v2.gguf", every_type_file(2).b);
  check_every_type(GgufFile::open((dir / "v2.gguf").string()), 2);
}

TEST(GgufReader, MoveKeepsTheMapping) {
  TempDir dir;
  write_bytes(dir / "m.gguf", every_type_file(3).b);
  GgufFile f = GgufFile::open((dir / "m.gguf").string());
  GgufFile g = std::move(f);
  check_every_type(g, 3);
}

TEST(GgufReader, ReleasePagesKeepsDataReadable) {
  TempDir dir;
  GgufWriter w;
  std::vector<float> big(1 << 20);
  for (size_t k = 0; k < big.size(); ++k) big[k] = static_cast<float>(k);
  w.add_tensor("big", GgmlType::F32, {1 << 20}, big.data(), big.size() * 4);
  w.write((dir / "big.gguf").string());
  GgufFile f = GgufFile::open((dir / "big.gguf").string());
  const TensorInfo& t = f.tensors()[0];
  const float* p = reinterpret_cast<const float*>(f.tensor_data(t));
  EXPECT_EQ(p[12345], 12345.0f);
  f.release_pages(t);
  EXPECT_EQ(p[12345], 12345.0f);  // faulted in again from the file
  EXPECT_EQ(p[(1 << 20) - 1], static_cast<float>((1 << 20) - 1));
}

TEST(GgufReader, FromMemoryReadsTheSameAsFromAFile) {
  const std::vector<uint8_t> bytes = every_type_file(3).b;
  GgufFile f = GgufFile::from_memory(bytes.data(), bytes.size(), "in-memory");
  EXPECT_EQ(f.path(), "in-memory");
  check_every_type(f, 3);
  EXPECT_EQ(f.tensor_data(f.tensors()[0]), bytes.data() + f.data_offset());  // not a copy
  f.release_pages(f.tensors()[1]);  // a no-op on the caller's memory: the bytes stay
  EXPECT_EQ(f.tensor_data(f.tensors()[1])[287], static_cast<uint8_t>(287 * 7 + 1));
  try {
    (void)GgufFile::from_memory(bytes.data(), 0, "in-memory");
    ADD_FAILURE() << "empty input opened";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("in-memory: truncated file", 0), 0u) << e.what();
  }
}

TEST(GgufReader, NoTensorsAndNoPadding) {
  // Vocab-only files have no tensors; the padding after the directory may be absent.
  Raw r;
  r.header(3, 0, 1).kv_str("general.architecture", "llama");
  TempDir dir;
  write_bytes(dir / "v.gguf", r.b);
  GgufFile f = GgufFile::open((dir / "v.gguf").string());
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_LE(f.data_offset(), f.file_size());
}

// ---- Typed getters --------------------------------------------------------------------------------

TEST(GgufReader, TypedGetters) {
  Raw r;
  r.header(3, 0, 7);
  r.str("u8").put<uint32_t>(U8).put<uint8_t>(7);
  r.str("neg").put<uint32_t>(I32).put<int32_t>(-1);
  r.str("big").put<uint32_t>(U64).put<uint64_t>(uint64_t{1} << 40);
  r.str("f64").put<uint32_t>(F64).put<double>(0.25);
  r.str("s").put<uint32_t>(STR).str("text");
  r.str("i64").put<uint32_t>(I64).put<int64_t>(123);
  r.str("u32s").put<uint32_t>(ARR).put<uint32_t>(U32).put<uint64_t>(1).put<uint32_t>(5);
  TempDir dir;
  const std::string path = (dir / "g.gguf").string();
  write_bytes(path, r.b);
  GgufFile f = GgufFile::open(path);

  EXPECT_EQ(f.get_u32("u8"), 7u);  // any integer type whose value fits
  EXPECT_EQ(f.get_u64("i64"), 123u);
  EXPECT_EQ(f.get_u64("big"), uint64_t{1} << 40);
  EXPECT_EQ(f.get_f32("f64"), 0.25f);
  EXPECT_EQ(f.find_u32("absent"), std::nullopt);
  EXPECT_EQ(f.find_string("absent"), std::nullopt);
  EXPECT_EQ(f.find_f32("absent"), std::nullopt);
  EXPECT_EQ(f.find_bool("absent"), std::nullopt);
  EXPECT_EQ(f.find_u64("absent"), std::nullopt);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_EQ(f.find_string("s"), "text");
  EXPECT_EQ(f.find_u32("u8"), 7u);

  auto message = [&](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(message([&] { f.get_u32("absent"); }), "required metadata key missing: absent");
  EXPECT_EQ(message([&] { f.get_string("absent"); }), "required metadata key missing: absent");
  EXPECT_EQ(message([&] { f.get_string_array("absent"); }), "required metadata key missing: absent");
  const std::string neg = message([&] { f.get_u32("neg"); });
  EXPECT_NE(neg.find("neg = -1 does not fit in UINT32"), std::string::npos) << neg;
  const std::string big = message([&] { f.get_u32("big"); });
  EXPECT_NE(big.find("does not fit in UINT32"), std::string::npos) << big;
  const std::string wrong = message([&] { f.get_string("u8"); });
  EXPECT_NE(wrong.find("metadata key u8 has type UINT8, expected STRING"), std::string::npos) << wrong;
  const std::string wrong_f = message([&] { f.get_f32("s"); });
  EXPECT_NE(wrong_f.find("has type STRING, expected FLOAT32"), std::string::npos) << wrong_f;
  const std::string wrong_b = message([&] { f.find_bool("u8"); });
  EXPECT_NE(wrong_b.find("expected BOOL"), std::string::npos) << wrong_b;
  const std::string wrong_arr = message([&] { f.get_i32_array("u32s"); });
  EXPECT_NE(wrong_arr.find("has type ARRAY[UINT32], expected ARRAY[INT32]"), std::string::npos) << wrong_arr;
  const std::string wrong_sarr = message([&] { f.get_string_array("s"); });
  EXPECT_NE(wrong_sarr.find("has type STRING, expected ARRAY[STRING]"), std::string::npos) << wrong_sarr;
}

// ---- ggml type table --------------------------------------------------------------------------

TEST(GgmlTypes, BlockGeometry) {
  // From the block_* structs in ggml-common.h: bytes per block / elements per block.
  struct Want {
    GgmlType t;
    const char* name;
    int64_t block;
    size_t bytes;
  };
  const Want want[] = {
      {GgmlType::F32, "F32", 1, 4},       {GgmlType::F16, "F16", 1, 2},
      {GgmlType::BF16, "BF16", 1, 2},     {GgmlType::Q8_0, "Q8_0", 32, 34},
      {GgmlType::Q4_0, "Q4_0", 32, 18},   {GgmlType::Q4_K, "Q4_K", 256, 144},
      {GgmlType::Q5_K, "Q5_K", 256, 176}, {GgmlType::Q6_K, "Q6_K", 256, 210},
      {GgmlType::Q8_K, "Q8_K", 256, 292}, {GgmlType::Q2_K, "Q2_K", 256, 84},
      {GgmlType::Q3_K, "Q3_K", 256, 110}, {GgmlType::IQ4_XS, "IQ4_XS", 256, 136},
      {GgmlType::I32, "I32", 1, 4},       {GgmlType::F64, "F64", 1, 8},
      {GgmlType::MXFP4, "MXFP4", 32, 17},
  };
  for (const Want& w : want) {
    const TypeTraits* tr = type_traits(static_cast<uint32_t>(w.t));
    ASSERT_NE(tr, nullptr) << w.name;
    EXPECT_STREQ(tr->name, w.name);
    EXPECT_EQ(tr->block_size, w.block) << w.name;
    EXPECT_EQ(tr->type_size, w.bytes) << w.name;
    EXPECT_EQ(type_name(w.t), w.name);
  }
  for (uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u}) {
    EXPECT_EQ(type_traits(removed), nullptr) << removed;
  }
  EXPECT_EQ(type_name(99u), "type99");
}

// ---- Writer ------------------------------------------------------------------------------------

/// The writer's rendering of every_type_file(): same keys in the same order, same tensors.
GgufWriter every_type_writer(uint32_t version) {
  GgufWriter w(version);
  w.add_u8("t.u8", 200);
  w.add_i8("t.i8", -100);
  w.add_u16("t.u16", 60000);
  w.add_i16("t.i16", -30000);
  w.add_u32("t.u32", 4000000000u);
  w.add_i32("t.i32", -2000000000);
  w.add_f32("t.f32", 1.5e-5f);
  w.add_bool("t.bool", true);
  w.add_string("t.str", "h\xc3\xa9llo\n");
  w.add_u64("t.u64", 0xfedcba9876543210ull);
  w.add_i64("t.i64", -0x123456789abcdefll);
  w.add_f64("t.f64", -2.25e300);
  w.add_string_array("t.arr_str", {"a", "", "ccc"});
  w.add_i32_array("t.arr_i32", {-7, 9});
  w.add_f32_array("t.arr_empty", {});
  w.add_value("t.nested",
              make_array(ValueType::ARRAY,
                         {make_array(ValueType::INT32, {make_i32(1), make_i32(2), make_i32(3)}),
                          make_array(ValueType::INT32, {}), make_array(ValueType::INT32, {make_i32(4)})}));
  w.add_value(
      "t.nested_str",
      make_array(ValueType::ARRAY, {make_array(ValueType::STRING, {make_string("x")}),
                                    make_array(ValueType::STRING, {make_string("y"), make_string("z")})}));
  w.set_alignment(64);
  float a[8];
  for (int k = 0; k < 8; ++k) a[k] = static_cast<float>(k) + 0.5f;
  w.add_tensor("a.weight", GgmlType::F32, {4, 2}, a, sizeof a);
  // b.weight streamed in through the fill callback.
  w.add_tensor("b.weight", GgmlType::Q4_K, {256, 2}, [](uint8_t* dst, uint64_t off, size_t n) {
    for (size_t k = 0; k < n; ++k) dst[k] = static_cast<uint8_t>((off + k) * 7 + 1);
  });
  return w;
}

TEST(GgufWriter, SameBytesAsHandBuiltV3AndV2) {
  for (uint32_t version : {3u, 2u}) {
    const std::vector<uint8_t> want = every_type_file(version).b;
    GgufWriter w = every_type_writer(version);
    EXPECT_EQ(w.to_bytes(), want) << "version " << version;
    EXPECT_EQ(w.data_offset() % 64, 0u);
    TempDir dir;
    w.write((dir / "w.gguf").string());
    EXPECT_EQ(test::read_file(dir / "w.gguf"), std::vector<char>(want.begin(), want.end()));
    check_every_type(GgufFile::open((dir / "w.gguf").string()), version);
  }
}

TEST(GgufWriter, DefaultAlignmentPadsTensorsTo32) {
  GgufWriter w;
  std::vector<uint8_t> q6(210, 3), f(12, 0);
  w.add_tensor("q", GgmlType::Q6_K, {256}, q6.data(), q6.size());
  w.add_tensor("f", GgmlType::F32, {3}, f.data(), f.size());
  w.add_tensor("g", GgmlType::F32, {3}, f.data(), f.size());
  TempDir dir;
  w.write((dir / "a.gguf").string());
  GgufFile r = GgufFile::open((dir / "a.gguf").string());
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_EQ(r.find("general.alignment"), nullptr);
  ASSERT_EQ(r.tensors().size(), 3u);
  EXPECT_EQ(r.tensors()[0].offset, 0u);
  EXPECT_EQ(r.tensors()[1].offset, 224u);  // 210 rounded up to 32
  EXPECT_EQ(r.tensors()[2].offset, 256u);
  EXPECT_EQ(r.data_offset() % 32, 0u);
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  w.add_u32("k", 1);
  EXPECT_THROW(w.add_string("k", "again"), Error);
  EXPECT_THROW(GgufWriter(1), Error);
  EXPECT_THROW(w.set_alignment(48), Error);
  EXPECT_THROW(w.set_alignment(0), Error);
  std::vector<uint8_t> data(144);
  EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_K, {128}, data.data(), data.size()), Error);  // 128 % 256
  EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_K, {256}, data.data(), 100), Error);          // size mismatch
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {0}, data.data(), 0), Error);
  EXPECT_THROW(w.add_tensor("t", GgmlType::F32, {1, 1, 1, 1, 1}, data.data(), 4), Error);
  w.add_tensor("t", GgmlType::Q4_K, {256}, data.data(), data.size());
  EXPECT_THROW(w.add_tensor("t", GgmlType::Q4_K, {256}, data.data(), data.size()), Error);
  EXPECT_THROW(w.add_value("arr", make_array(ValueType::INT32, {make_u32(1)})), Error);
  EXPECT_EQ(GgufWriter::tensor_bytes(GgmlType::Q6_K, {512, 3}), 2u * 3u * 210u);
}

// ---- Malformed files -----------------------------------------------------------------------------

/// A minimal valid file: one key, one F32 [8] tensor at offset 0. Pieces can be swapped by callers.
Raw one_tensor_file(uint32_t type = kF32, std::vector<int64_t> ne = {8}, uint64_t offset = 0,
                    size_t data_bytes = 32) {
  Raw r;
  r.header(3, 1, 1).kv_u32("k", 1).tensor("w", ne, type, offset).pad(32).fill(data_bytes, 0);
  return r;
}

TEST(GgufMalformed, ValidBaselineOpens) {
  TempDir dir;
  write_bytes(dir / "ok.gguf", one_tensor_file().b);
  EXPECT_NO_THROW(GgufFile::open((dir / "ok.gguf").string()));
}

TEST(GgufMalformed, WrongMagicShowsTheBytes) {
  Raw r = one_tensor_file();
  std::memcpy(r.b.data(), "GGML", 4);
  EXPECT_ERROR_HAS(r.b, "not a GGUF file", "'GGML'", "47 47 4d 4c", "expected 'GGUF'");
  r.b[0] = 0x00;
  r.b[1] = 0xff;
  EXPECT_ERROR_HAS(r.b, "not a GGUF file", "00 ff 4d 4c");
}

TEST(GgufMalformed, UnsupportedVersion) {
  for (uint32_t v : {0u, 1u, 4u}) {
    Raw r;
    r.header(v, 0, 0);
    EXPECT_ERROR_HAS(r.b, ("unsupported GGUF version " + std::to_string(v) + " (supported: 2, 3)"));
  }
  Raw swapped;
  swapped.header(0x03000000u, 0, 0);
  EXPECT_ERROR_HAS(swapped.b, "unsupported GGUF version 50331648", "big-endian");
}

TEST(GgufMalformed, TruncatedNamesTheField) {
  Raw r = one_tensor_file();
  EXPECT_ERROR_HAS(std::vector<uint8_t>(r.b.begin(), r.b.begin() + 2), "truncated file", "magic");
  EXPECT_ERROR_HAS(std::vector<uint8_t>(r.b.begin(), r.b.begin() + 6), "truncated file", "version",
                   "at byte offset 4");
  EXPECT_ERROR_HAS(std::vector<uint8_t>(r.b.begin(), r.b.begin() + 12), "truncated file", "tensor count");
  EXPECT_ERROR_HAS(std::vector<uint8_t>(), "truncated file", "empty");
  // Header: 24 bytes, then key "k": length (8) + 1 byte + type (4) + value (4) = 17.
  EXPECT_ERROR_HAS(std::vector<uint8_t>(r.b.begin(), r.b.begin() + 24 + 8 + 1 + 4 + 2), "truncated file",
                   "value of metadata key 'k'", "at byte offset 37", "needs 4 bytes, only 2 left");
}

TEST(GgufMalformed, TensorDataPastTheEnd) {
  Raw r = one_tensor_file();
  r.b.resize(r.b.size() - 4);  // last 4 bytes of the only tensor missing
  EXPECT_ERROR_HAS(r.b, "tensor 'w'", "runs past the end of the file", "truncated file?",
                   "download or copy it again");
  // Offset + size wraps around 2^64: must not pass as "in range".
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {8}, std::numeric_limits<uint64_t>::max() - 31).b, "tensor 'w'",
                   "runs past the end of the file");
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {8}, 64).b, "tensor 'w'", "runs past the end of the file");
  // The directory itself ends past the file end once padded.
  Raw no_data;
  no_data.header(3, 1, 0).tensor("w", {8}, kF32, 0);
  EXPECT_ERROR_HAS(no_data.b, "truncated file", "tensor data should start at byte offset");
}

TEST(GgufMalformed, TooManyDims) {
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {8, 1, 1, 1, 1}).b, "tensor 'w' has n_dims 5, at most 4");
}

TEST(GgufMalformed, NonPositiveDimsAndOverflow) {
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {8, 0}).b, "tensor 'w' has ne[1] = 0", "must be positive");
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {-8}).b, "tensor 'w' has ne[0] = -8");
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {int64_t{1} << 32, int64_t{1} << 32}).b, "element count overflows");
  // Element count fits in int64 but the byte size does not fit... in the file.
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {int64_t{1} << 40, int64_t{1} << 20}).b, "runs past the end");
}

TEST(GgufMalformed, UnknownGgmlType) {
  EXPECT_ERROR_HAS(one_tensor_file(99).b, "tensor 'w' has unknown ggml type id 99");
  EXPECT_ERROR_HAS(one_tensor_file(4).b, "unknown ggml type id 4");  // removed Q4_2
}

TEST(GgufMalformed, RowNotAMultipleOfTheBlock) {
  EXPECT_ERROR_HAS(one_tensor_file(kQ4_K, {100, 2}).b, "tensor 'w' has row length ne[0] = 100",
                   "not a multiple of the Q4_K block size 256");
}

TEST(GgufMalformed, DuplicateTensorName) {
  Raw r;
  r.header(3, 2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad(32).fill(64, 0);
  EXPECT_ERROR_HAS(r.b, "duplicate tensor name 'w'", "tensor info 1");
}

TEST(GgufMalformed, DuplicateKey) {
  Raw r;
  r.header(3, 0, 2).kv_u32("a.b", 1).kv_u32("a.b", 2);
  EXPECT_ERROR_HAS(r.b, "duplicate metadata key 'a.b'");
}

TEST(GgufMalformed, TensorOffsetNotAligned) {
  EXPECT_ERROR_HAS(one_tensor_file(kF32, {8}, 4, 64).b,
                   "tensor 'w' data offset 4 is not a multiple of the alignment 32");
}

TEST(GgufMalformed, OverlappingTensors) {
  Raw r;
  r.header(3, 2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad(32).fill(64, 0);
  EXPECT_ERROR_HAS(r.b, "tensors 'a' and 'b' overlap");
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t al : {0u, 3u, 48u}) {
    Raw r;
    r.header(3, 0, 1).kv_u32("general.alignment", al);
    EXPECT_ERROR_HAS(r.b, ("general.alignment is " + std::to_string(al)), "nonzero power of two");
  }
  Raw s;
  s.header(3, 0, 1).kv_str("general.alignment", "32");
  EXPECT_ERROR_HAS(s.b, "general.alignment has type STRING");
}

TEST(GgufMalformed, HugeCountsAreRejectedBeforeAllocating) {
  Raw kv;
  kv.header(3, 0, uint64_t{1} << 60);
  EXPECT_ERROR_HAS(kv.b, "truncated file", "metadata key/value count 1152921504606846976");
  Raw tn;
  tn.header(3, uint64_t{1} << 62, 0);
  EXPECT_ERROR_HAS(tn.b, "truncated file", "tensor count");
  Raw arr;
  arr.header(3, 0, 1).str("a").put<uint32_t>(ARR).put<uint32_t>(U64).put<uint64_t>(uint64_t{1} << 61);
  EXPECT_ERROR_HAS(arr.b, "truncated file: array of 2305843009213693952 UINT64", "metadata key 'a'");
  Raw str;
  str.header(3, 0, 1).str("a").put<uint32_t>(STR).put<uint64_t>(~uint64_t{0});
  EXPECT_ERROR_HAS(str.b, "truncated file", "value of metadata key 'a'", "has length 18446744073709551615");
  Raw key;
  key.header(3, 0, 1).put<uint64_t>(1000).fill(20, 'x');
  EXPECT_ERROR_HAS(key.b, "truncated file", "metadata key 0", "has length 1000");
}

TEST(GgufMalformed, MetadataElementBudget) {
  // 2^24 + 1 one-byte elements fit in the file but would cost ~1.7 GB as parsed Values.
  const uint64_t n = (uint64_t{1} << 24) + 1;
  Raw r;
  r.header(3, 0, 1).str("big").put<uint32_t>(ARR).put<uint32_t>(U8).put<uint64_t>(n).fill(n, 0);
  EXPECT_ERROR_HAS(r.b, "metadata arrays hold more than 16777216 elements", "metadata key 'big'");
}

TEST(GgufMalformed, BadValueTypes) {
  Raw t;
  t.header(3, 0, 1).str("a").put<uint32_t>(13).put<uint32_t>(0);
  EXPECT_ERROR_HAS(t.b, "unknown metadata value type 13", "metadata key 'a'");
  Raw e;
  e.header(3, 0, 1).str("a").put<uint32_t>(ARR).put<uint32_t>(77).put<uint64_t>(0);
  EXPECT_ERROR_HAS(e.b, "unknown metadata value type 77", "array element type");
  Raw b;
  b.header(3, 0, 1).str("a").put<uint32_t>(BOOL).put<uint8_t>(2);
  EXPECT_ERROR_HAS(b.b, "bad BOOL byte 2");
  Raw deep;  // 40 nested arrays of one array each
  deep.header(3, 0, 1).str("a").put<uint32_t>(ARR);
  for (int k = 0; k < 40; ++k) deep.put<uint32_t>(ARR).put<uint64_t>(1);
  deep.put<uint32_t>(U8).put<uint64_t>(0);
  EXPECT_ERROR_HAS(deep.b, "nested more than 16 deep");
}

TEST(GgufMalformed, NotAFile) {
  TempDir dir;
  for (const std::string& p : {(dir / "missing.gguf").string(), dir.path().string()}) {
    try {
      GgufFile::open(p);
      ADD_FAILURE() << p;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(p + ": ", 0), 0u) << e.what();
    }
  }
}

// Every prefix of a small valid file is rejected with dllm::Error (never a crash, an out-of-bounds
// read under ASan, or another exception type); every single-byte corruption of its header and
// directory either opens or raises dllm::Error.
TEST(GgufMalformed, EveryTruncationAndByteFlipIsAnError) {
  const std::vector<uint8_t> full = every_type_file(3).b;
  TempDir dir;
  const std::string path = (dir / "t.gguf").string();
  for (size_t n = 0; n < full.size(); ++n) {
    write_bytes(path, std::vector<uint8_t>(full.begin(), full.begin() + static_cast<ptrdiff_t>(n)));
    EXPECT_THROW(GgufFile::open(path), Error) << "prefix of " << n << " bytes";
  }
  write_bytes(path, full);
  const size_t data_offset = GgufFile::open(path).data_offset();
  size_t opened = 0, rejected = 0;
  for (size_t pos = 0; pos < data_offset; ++pos) {
    for (uint8_t x : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::vector<uint8_t> bad = full;
      bad[pos] ^= x;
      write_bytes(path, bad);
      try {
        GgufFile f = GgufFile::open(path);
        for (const TensorInfo& t : f.tensors()) {  // whatever opened must be readable in bounds
          const uint8_t* p = f.tensor_data(t);
          volatile uint8_t sink = t.n_bytes ? p[t.n_bytes - 1] : 0;
          (void)sink;
        }
        ++opened;
      } catch (const Error&) {
        ++rejected;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << pos << " ^ " << int(x) << ": non-dllm exception " << e.what();
      }
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(opened, 0u);  // flips inside values are harmless
}

// ---- Limits a hostile file cannot exceed (docs/reliability.md) ----------------------------------

TEST(GgufLimits, MetadataKeyCount) {
  // 65537 keys would fit in the bytes that follow (13 bytes each at least) but pass the limit.
  Raw r;
  r.header(3, 0, 65537).fill(13 * 65537, 0);
  EXPECT_ERROR_HAS(r.b, "metadata key/value count 65537 is more than the limit of 65536");
}

TEST(GgufLimits, TensorCount) {
  Raw r;
  r.header(3, 65537, 0).fill(24 * 65537, 0);
  EXPECT_ERROR_HAS(r.b, "tensor count 65537 is more than the limit of 65536");
}

TEST(GgufLimits, KeyLength) {
  Raw ok;
  ok.header(3, 0, 1).kv_u32(std::string(65535, 'k'), 1);
  TempDir dir;
  write_bytes(dir / "ok.gguf", ok.b);
  EXPECT_NO_THROW(GgufFile::open((dir / "ok.gguf").string()));
  Raw r;
  r.header(3, 0, 1).kv_u32(std::string(65536, 'k'), 1);
  EXPECT_ERROR_HAS(r.b, "metadata key 0 at byte offset 24 is 65536 bytes long, more than the limit of 65535");
}

TEST(GgufLimits, TensorNameLength) {
  TempDir dir;
  Raw ok;
  ok.header(3, 1, 0).tensor(std::string(64, 'n'), {8}, kF32, 0).pad(32).fill(32, 0);
  write_bytes(dir / "ok.gguf", ok.b);
  EXPECT_NO_THROW(GgufFile::open((dir / "ok.gguf").string()));
  Raw r;
  r.header(3, 1, 0).tensor(std::string(65, 'n'), {8}, kF32, 0).pad(32).fill(32, 0);
  EXPECT_ERROR_HAS(r.b, "tensor info 0 name at byte offset 24 is 65 bytes long, more than the limit of 64");
}

TEST(GgufLimits, StringValueLength) {
  // 2^28 + 1 bytes of string present in the buffer: refused before the copy, naming the key.
  const uint64_t n = (uint64_t{1} << 28) + 1;
  Raw r;
  r.header(3, 0, 1).str("big.text").put<uint32_t>(STR).put<uint64_t>(n);
  r.b.resize(r.b.size() + n, 'x');
  try {
    (void)GgufFile::from_memory(r.b.data(), r.b.size(), "m");
    ADD_FAILURE() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "m: value of metadata key 'big.text' at byte offset 44 is 268435457 bytes long, more than the "
              "limit of 268435456 bytes");
  }
}

TEST(GgufLimits, ByteSizeOverflow) {
  // 2^62 F64 elements: the element count fits in int64, the byte count (2^65) does not fit in 64 bits.
  EXPECT_ERROR_HAS(one_tensor_file(28, {int64_t{1} << 31, int64_t{1} << 31}).b, "tensor 'w'",
                   "whose byte size overflows 64 bits");
}

TEST(GgufLimits, AlignmentRange) {
  Raw big;
  big.header(3, 0, 1).kv_u32("general.alignment", 1u << 31);
  EXPECT_ERROR_HAS(big.b, "general.alignment is 2147483648", "nonzero power of two");
  Raw neg;
  neg.header(3, 0, 1).str("general.alignment").put<uint32_t>(I32).put<int32_t>(-32);
  EXPECT_ERROR_HAS(neg.b, "general.alignment is -32");
}

TEST(GgufLimits, TensorsTogetherLargerThanTheData) {
  // Each tensor fits the 64 data bytes alone; together they need 96.
  Raw r;
  r.header(3, 3, 0).tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 32).tensor("c", {8}, kF32, 64);
  r.pad(32).fill(64, 0);
  EXPECT_ERROR_HAS(r.b, "tensor 'c'", "runs past the end of the file");
  Raw s;
  s.header(3, 3, 0).tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 32).tensor("c", {16}, kF32, 0);
  s.pad(32).fill(64, 0);
  EXPECT_ERROR_HAS(s.b, "overlap");
}

TEST(GgufMalformed, NamesInMessagesAreEscaped) {
  // A newline and an ESC sequence in a key or tensor name must not reach the terminal raw: the
  // message stays one line (open_error checks) and shows them escaped.
  Raw key;
  key.header(3, 0, 2).kv_u32("a\nb\x1b[2J", 1).kv_u32("a\nb\x1b[2J", 2);
  EXPECT_ERROR_HAS(key.b, "duplicate metadata key 'a\\nb\\x1b[2J'");
  Raw name;
  name.header(3, 1, 0).tensor("w\r\xff", {8}, kF32, 4).pad(32).fill(64, 0);
  EXPECT_ERROR_HAS(name.b, "tensor 'w\\r\\xff' data offset 4");
}

}  // namespace
}  // namespace dllm::gguf
