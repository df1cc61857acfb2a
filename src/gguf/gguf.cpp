// GGUF reader: maps the file read-only and parses it through a bounds-checked cursor.
// Layout (ggml/docs/gguf.md in llama.cpp), all little-endian:
//   "GGUF" | u32 version | u64 n_tensors | u64 n_kv | n_kv x (string key, u32 type, value)
//   | n_tensors x (string name, u32 n_dims, i64 ne[n_dims], u32 ggml type, u64 offset)
//   | padding to general.alignment | tensor data (each tensor at data_offset + offset).
// string = u64 length + bytes (no terminator); array = u32 element type, u64 count, elements.
#include "gguf/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "base/error.h"
#include "base/escape.h"

namespace dllm::gguf {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
// Limits a hostile file cannot exceed, each checked before anything of that size is allocated.
// Real models are far inside them: ~300 tensors (an 8B dense model) to ~1,100 (DeepSeek-V3),
// ~40 metadata keys, tensor names like "blk.31.ffn_down.weight". Key and tensor-name lengths are
// the GGUF specification's (ggml/docs/gguf.md: keys "at most 2^16-1 bytes", tensor names "at most
// 64 bytes"). The longest real string value is an embedded tokenizer.json (tens of MB).
constexpr uint64_t kMaxTensors = uint64_t{1} << 16;
constexpr uint64_t kMaxMetadataKeys = uint64_t{1} << 16;
constexpr uint64_t kMaxKeyBytes = (uint64_t{1} << 16) - 1;
constexpr uint64_t kMaxTensorNameBytes = 64;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 28;
// Nested arrays recurse; a hostile file could nest millions deep in a few MB.
constexpr int kMaxArrayDepth = 16;
// Each parsed array element becomes a Value (~100 bytes), so a byte-sized element in the file can
// cost 100x its size in memory; real models carry well under 1M elements (3 vocab-sized arrays).
constexpr uint64_t kMaxMetadataElements = uint64_t{1} << 24;

const char* kValueTypeNames[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                 "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};

/// Serialized size of a scalar, the least bytes an element of type t can take (STRING: its length
/// field; ARRAY: element type + count).
uint64_t min_value_bytes(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL:
      return 1;
    case ValueType::UINT16:
    case ValueType::INT16:
      return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32:
      return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64:
    case ValueType::STRING:
      return 8;
    case ValueType::ARRAY:
      return 12;
    default:
      return 1;
  }
}

/// A truncated file is almost always an interrupted download or copy: say what to do about it.
std::string with_hint(const std::string& what) {
  if (what.rfind("truncated file", 0) != 0) return what;
  return what + " (the file is incomplete, e.g. an interrupted download or copy: download or copy it again)";
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

std::string printable(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (p[i] >= 0x20 && p[i] < 0x7f) ? static_cast<char>(p[i]) : '.';
  return s;
}

/// Reads little-endian fields from [base, base + size); every read checks the bytes left first and
/// raises "truncated file" naming the field and its offset. The only way the parser touches the map.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size, const std::string& path)
      : base_(base), size_(size), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + with_hint(what)); }

  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      fail("truncated file: " + what + " at byte offset " + std::to_string(pos_) + " needs " +
           std::to_string(n) + " bytes, only " + std::to_string(left()) + " left (file size " +
           std::to_string(size_) + ")");
  }

  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, base_ + pos_, sizeof(T));  // unaligned-safe load
    pos_ += sizeof(T);
    return v;
  }

  /// A GGUF string; longer than `max` bytes is an error naming `what` and the limit.
  std::string read_string(const std::string& what, uint64_t max) {
    const uint64_t at = pos_;
    const uint64_t n = read<uint64_t>(what + " length");
    if (n > max && n <= left())
      fail(what + " at byte offset " + std::to_string(at) + " is " + std::to_string(n) +
           " bytes long, more than the limit of " + std::to_string(max) + " bytes");
    if (n > left())
      fail("truncated file: " + what + " at byte offset " + std::to_string(at) + " has length " +
           std::to_string(n) + " but only " + std::to_string(left()) + " bytes are left (file size " +
           std::to_string(size_) + ")");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  const std::string& path_;
  uint64_t pos_ = 0;
};

class Parser {
 public:
  explicit Parser(Cursor& c) : c_(c) {}

  Value parse_value(ValueType t, const std::string& ctx, int depth) {
    Value v;
    v.type = t;
    switch (t) {
      case ValueType::UINT8:
        v.u = c_.read<uint8_t>(ctx);
        break;
      case ValueType::INT8:
        v.i = c_.read<int8_t>(ctx);
        break;
      case ValueType::UINT16:
        v.u = c_.read<uint16_t>(ctx);
        break;
      case ValueType::INT16:
        v.i = c_.read<int16_t>(ctx);
        break;
      case ValueType::UINT32:
        v.u = c_.read<uint32_t>(ctx);
        break;
      case ValueType::INT32:
        v.i = c_.read<int32_t>(ctx);
        break;
      case ValueType::UINT64:
        v.u = c_.read<uint64_t>(ctx);
        break;
      case ValueType::INT64:
        v.i = c_.read<int64_t>(ctx);
        break;
      case ValueType::FLOAT32:
        v.f = c_.read<float>(ctx);
        break;
      case ValueType::FLOAT64:
        v.f = c_.read<double>(ctx);
        break;
      case ValueType::BOOL: {
        const uint64_t at = c_.pos();
        const uint8_t b = c_.read<uint8_t>(ctx);
        if (b > 1)
          c_.fail("bad BOOL byte " + std::to_string(b) + " in " + ctx + " at byte offset " +
                  std::to_string(at));
        v.u = b;
        break;
      }
      case ValueType::STRING:
        v.s = c_.read_string(ctx, kMaxStringBytes);
        break;
      case ValueType::ARRAY:
        parse_array(v, ctx, depth);
        break;
      default:
        c_.fail("internal: unexpected value type in " + ctx);
    }
    return v;
  }

  ValueType read_type(const std::string& ctx) {
    const uint64_t at = c_.pos();
    const uint32_t t = c_.read<uint32_t>(ctx);
    if (t >= static_cast<uint32_t>(ValueType::kSentinel))
      c_.fail("unknown metadata value type " + std::to_string(t) + " for " + ctx + " at byte offset " +
              std::to_string(at) + " (valid: 0..12)");
    return static_cast<ValueType>(t);
  }

 private:
  void parse_array(Value& v, const std::string& ctx, int depth) {
    if (depth >= kMaxArrayDepth)
      c_.fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep in " + ctx);
    v.elem_type = read_type("array element type of " + ctx);
    const uint64_t at = c_.pos();
    const uint64_t n = c_.read<uint64_t>("array length of " + ctx);
    // Cap the untrusted count before allocating: every element takes at least min bytes.
    const uint64_t min = min_value_bytes(v.elem_type);
    if (n > c_.left() / min)
      c_.fail(
          "truncated file: array of " + std::to_string(n) + " " + value_type_name(v.elem_type) + " in " +
          ctx + " at byte offset " + std::to_string(at) + " needs at least " +
          (n > std::numeric_limits<uint64_t>::max() / min ? std::string("2^64") : std::to_string(n * min)) +
          " bytes, only " + std::to_string(c_.left()) + " left");
    n_elements_ += n;
    if (n_elements_ > kMaxMetadataElements)
      c_.fail("metadata arrays hold more than " + std::to_string(kMaxMetadataElements) +
              " elements in all (at " + ctx + "); refusing to load");
    v.items.reserve(n);
    for (uint64_t k = 0; k < n; ++k) {
      if (v.elem_type == ValueType::ARRAY) {
        Value item;
        item.type = ValueType::ARRAY;
        parse_array(item, ctx + "[" + std::to_string(k) + "]", depth + 1);
        v.items.push_back(std::move(item));
      } else {
        v.items.push_back(parse_value(v.elem_type, ctx, depth + 1));
      }
    }
  }

  Cursor& c_;
  uint64_t n_elements_ = 0;
};

bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64:
      return true;
    default:
      return false;
  }
}

bool is_signed(ValueType t) {
  return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}

std::string describe(const Value& v) {
  if (v.type == ValueType::ARRAY) return std::string("ARRAY[") + value_type_name(v.elem_type) + "]";
  return value_type_name(v.type);
}

}  // namespace

const char* value_type_name(ValueType t) {
  const auto i = static_cast<uint32_t>(t);
  if (i < static_cast<uint32_t>(ValueType::kSentinel)) return kValueTypeNames[i];
  return "INVALID";
}

uint64_t TensorInfo::row_bytes() const {
  const TypeTraits* tr = type_traits(static_cast<uint32_t>(type));
  if (!tr) return 0;
  return static_cast<uint64_t>(ne[0] / tr->block_size) * tr->type_size;
}

struct GgufFile::Impl {
  std::string path;
  int fd = -1;
  const uint8_t* map = nullptr;
  uint64_t size = 0;
  uint32_t version = 0;
  uint64_t alignment = kDefaultAlignment;
  uint64_t data_offset = 0;
  std::vector<KeyValue> kv;
  std::unordered_map<std::string, size_t> kv_index;
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string, size_t> tensor_index;

  bool mapped = false;  ///< `map` is our mmap (open); false: the caller's bytes (from_memory)

  ~Impl() {
    if (map && mapped) munmap(const_cast<uint8_t*>(map), size);
    if (fd >= 0) close(fd);
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path + ": " + with_hint(what)); }

  void map_file() {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(std::string("cannot open file: ") + std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) fail(std::string("cannot stat file: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail("not a regular file");
    size = static_cast<uint64_t>(st.st_size);
    if (size == 0) fail("truncated file: the file is empty (0 bytes), expected a GGUF header");
    void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) fail(std::string("cannot map file: ") + std::strerror(errno));
    map = static_cast<const uint8_t*>(p);
    mapped = true;
  }

  void parse() {
    Cursor c(map, size, path);
    Parser parser(c);

    // Header.
    if (size < 4)
      fail("truncated file: " + std::to_string(size) + " bytes, too short for the GGUF magic (bytes " +
           hex_bytes(map, size) + ")");
    if (std::memcmp(map, "GGUF", 4) != 0)
      fail("not a GGUF file: magic is '" + printable(map, 4) + "' (bytes " + hex_bytes(map, 4) +
           "), expected 'GGUF' (47 47 55 46)");
    c.read<uint32_t>("magic");
    version = c.read<uint32_t>("version");
    if (version != 2 && version != 3) {
      std::string msg = "unsupported GGUF version " + std::to_string(version) + " (supported: 2, 3)";
      if (version == 1) msg += "; GGUF v1 files predate 2023-08, convert them again with a current llama.cpp";
      if (version > 0xffff)
        msg += "; a byte-swapped version suggests a big-endian file, which is not supported";
      fail(msg);
    }
    const uint64_t n_tensors = c.read<uint64_t>("tensor count");
    const uint64_t n_kv = c.read<uint64_t>("metadata key/value count");
    // Cap untrusted counts before reserving: a key/value takes at least 13 bytes (key length,
    // type, 1-byte value), a tensor info at least 24 (name length, n_dims, type, offset).
    if (n_kv > c.left() / 13)
      fail("truncated file: metadata key/value count " + std::to_string(n_kv) + " cannot fit in the " +
           std::to_string(c.left()) + " bytes after the header");
    if (n_kv > kMaxMetadataKeys)
      fail("metadata key/value count " + std::to_string(n_kv) + " is more than the limit of " +
           std::to_string(kMaxMetadataKeys));

    // Metadata. Names from the file are escaped in messages (a newline or an ESC sequence in a key
    // must not reach the terminal raw).
    kv.reserve(n_kv);
    for (uint64_t k = 0; k < n_kv; ++k) {
      const std::string n = "metadata key " + std::to_string(k);
      const uint64_t at = c.pos();
      std::string key = c.read_string(n, kMaxKeyBytes);
      const std::string ctx = "metadata key '" + escape_text(key) + "'";
      if (kv_index.count(key))
        fail("duplicate " + ctx + " (key/value " + std::to_string(k) + " at byte offset " +
             std::to_string(at) + ")");
      const ValueType t = parser.read_type("type of " + ctx);
      Value v = parser.parse_value(t, "value of " + ctx, 0);
      kv_index.emplace(key, kv.size());
      kv.push_back(KeyValue{std::move(key), std::move(v)});
    }
    if (const Value* a = find("general.alignment")) {
      if (!is_integer(a->type)) fail("general.alignment has type " + describe(*a) + ", expected UINT32");
      const bool neg = is_signed(a->type) && a->i < 0;
      const uint64_t al = is_signed(a->type) ? static_cast<uint64_t>(a->i) : a->u;
      if (neg || al == 0 || (al & (al - 1)) != 0 || al > (uint64_t{1} << 30))
        fail("general.alignment is " + (is_signed(a->type) ? std::to_string(a->i) : std::to_string(a->u)) +
             ", expected a nonzero power of two");
      alignment = al;
    }

    // Tensor directory.
    if (n_tensors > c.left() / 24)
      fail("truncated file: tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
           std::to_string(c.left()) + " bytes after the metadata (byte offset " + std::to_string(c.pos()) +
           ")");
    if (n_tensors > kMaxTensors)
      fail("tensor count " + std::to_string(n_tensors) + " is more than the limit of " +
           std::to_string(kMaxTensors));
    tensors.reserve(n_tensors);
    for (uint64_t k = 0; k < n_tensors; ++k) {
      TensorInfo t;
      const std::string n = "tensor info " + std::to_string(k);
      const uint64_t at = c.pos();
      t.name = c.read_string(n + " name", kMaxTensorNameBytes);
      const std::string ctx = "tensor '" + escape_text(t.name) + "'";
      if (tensor_index.count(t.name))
        fail("duplicate tensor name '" + escape_text(t.name) + "' (tensor info " + std::to_string(k) +
             " at byte offset " + std::to_string(at) + ")");
      t.n_dims = c.read<uint32_t>(ctx + " n_dims");
      if (t.n_dims > 4) fail(ctx + " has n_dims " + std::to_string(t.n_dims) + ", at most 4 are supported");
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        t.ne[d] = c.read<int64_t>(ctx + " ne[" + std::to_string(d) + "]");
        if (t.ne[d] <= 0)
          fail(ctx + " has ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]) +
               ", every dimension must be positive");
      }
      // Element count must fit in int64 (ne are positive, so check each product step).
      int64_t n_el = 1;
      for (int d = 0; d < 4; ++d) {
        if (n_el > std::numeric_limits<int64_t>::max() / t.ne[d])
          fail(ctx + " has shape " + shape_string(t) + " whose element count overflows 64 bits");
        n_el *= t.ne[d];
      }
      const uint64_t type_at = c.pos();
      const uint32_t type_id = c.read<uint32_t>(ctx + " type");
      const TypeTraits* tr = type_traits(type_id);
      if (!tr)
        fail(ctx + " has unknown ggml type id " + std::to_string(type_id) + " at byte offset " +
             std::to_string(type_at));
      t.type = static_cast<GgmlType>(type_id);
      if (t.ne[0] % tr->block_size != 0)
        fail(ctx + " has row length ne[0] = " + std::to_string(t.ne[0]) + ", not a multiple of the " +
             tr->name + " block size " + std::to_string(tr->block_size));
      // n_el / block_size * type_size: n_el / block_size fits, the product may not.
      const uint64_t n_blocks = static_cast<uint64_t>(n_el / tr->block_size);
      if (n_blocks > std::numeric_limits<uint64_t>::max() / tr->type_size)
        fail(ctx + " has shape " + shape_string(t) + " whose byte size overflows 64 bits");
      t.n_bytes = n_blocks * tr->type_size;
      t.offset = c.read<uint64_t>(ctx + " offset");
      tensor_index.emplace(t.name, tensors.size());
      tensors.push_back(std::move(t));
    }

    // Tensor data section, aligned after the directory.
    const uint64_t end_of_directory = c.pos();
    data_offset = end_of_directory + (alignment - end_of_directory % alignment) % alignment;
    if (tensors.empty()) {
      data_offset = std::min(data_offset, size);  // files without tensors may omit the padding
      return;
    }
    if (data_offset > size)
      fail("truncated file: tensor data should start at byte offset " + std::to_string(data_offset) +
           " (after the directory, aligned to " + std::to_string(alignment) + ") but the file has " +
           std::to_string(size) + " bytes");
    const uint64_t data_size = size - data_offset;
    for (const TensorInfo& t : tensors) {
      const std::string ctx = "tensor '" + escape_text(t.name) + "'";
      if (t.offset % alignment != 0)
        fail(ctx + " data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
             std::to_string(alignment));
      // Overflow-safe form of offset + n_bytes <= data_size.
      if (t.offset > data_size || t.n_bytes > data_size - t.offset)
        fail(ctx + " data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
             " bytes) at file offset " + std::to_string(data_offset) + " + " + std::to_string(t.offset) +
             " runs past the end of the file (size " + std::to_string(size) + "; " +
             std::to_string(data_size) +
             " bytes of tensor data): truncated file? (an interrupted download or copy, or a corrupt "
             "tensor table: download or copy it again)");
    }
    // No two tensors may share bytes (a corrupted offset would alias another weight).
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(tensors.size());
    for (const TensorInfo& t : tensors) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
      const TensorInfo* a = by_offset[k - 1];
      const TensorInfo* b = by_offset[k];
      if (a->offset + a->n_bytes > b->offset)
        fail("tensors '" + escape_text(a->name) + "' and '" + escape_text(b->name) +
             "' overlap in the data section (offsets " + std::to_string(a->offset) + "+" +
             std::to_string(a->n_bytes) + " and " + std::to_string(b->offset) + ")");
    }
  }

  static std::string shape_string(const TensorInfo& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < std::max<uint32_t>(t.n_dims, 1); ++d) {
      if (d) s += ", ";
      s += std::to_string(t.ne[d]);
    }
    return s + "]";
  }

  const Value* find(std::string_view key) const {
    auto it = kv_index.find(std::string(key));
    return it == kv_index.end() ? nullptr : &kv[it->second].value;
  }

  const Value& require(std::string_view key) const {
    const Value* v = find(key);
    if (!v) throw Error("required metadata key missing: " + std::string(key));
    return *v;
  }

  [[noreturn]] void type_error(std::string_view key, const char* expected, const Value& v) const {
    fail("metadata key " + std::string(key) + " has type " + describe(v) + ", expected " + expected);
  }

  /// Integer value of v as u64 when it is an integer type holding a value in [0, max].
  uint64_t to_unsigned(std::string_view key, const Value& v, uint64_t max, const char* expected) const {
    if (!is_integer(v.type)) type_error(key, expected, v);
    if (is_signed(v.type)) {
      if (v.i < 0 || static_cast<uint64_t>(v.i) > max)
        fail("metadata key " + std::string(key) + " = " + std::to_string(v.i) + " does not fit in " +
             expected);
      return static_cast<uint64_t>(v.i);
    }
    if (v.u > max)
      fail("metadata key " + std::string(key) + " = " + std::to_string(v.u) + " does not fit in " + expected);
    return v.u;
  }

  float to_float(std::string_view key, const Value& v) const {
    if (v.type != ValueType::FLOAT32 && v.type != ValueType::FLOAT64) type_error(key, "FLOAT32", v);
    return static_cast<float>(v.f);
  }
  bool to_bool(std::string_view key, const Value& v) const {
    if (v.type != ValueType::BOOL) type_error(key, "BOOL", v);
    return v.u != 0;
  }
  const std::string& to_string(std::string_view key, const Value& v) const {
    if (v.type != ValueType::STRING) type_error(key, "STRING", v);
    return v.s;
  }
};

GgufFile GgufFile::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->map_file();
  impl->parse();
  return GgufFile(std::move(impl));
}

GgufFile GgufFile::from_memory(const uint8_t* data, size_t size, const std::string& name) {
  auto impl = std::make_unique<Impl>();
  impl->path = name;
  if (size == 0) impl->fail("truncated file: the file is empty (0 bytes), expected a GGUF header");
  impl->map = data;
  impl->size = size;
  impl->parse();
  return GgufFile(std::move(impl));
}

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

const std::string& GgufFile::path() const {
  return impl_->path;
}
uint32_t GgufFile::version() const {
  return impl_->version;
}
uint64_t GgufFile::file_size() const {
  return impl_->size;
}
uint64_t GgufFile::alignment() const {
  return impl_->alignment;
}
uint64_t GgufFile::data_offset() const {
  return impl_->data_offset;
}
const std::vector<KeyValue>& GgufFile::metadata() const {
  return impl_->kv;
}
const Value* GgufFile::find(std::string_view key) const {
  return impl_->find(key);
}

uint64_t GgufFile::get_u64(std::string_view key) const {
  return impl_->to_unsigned(key, impl_->require(key), std::numeric_limits<uint64_t>::max(), "UINT64");
}
uint32_t GgufFile::get_u32(std::string_view key) const {
  return static_cast<uint32_t>(
      impl_->to_unsigned(key, impl_->require(key), std::numeric_limits<uint32_t>::max(), "UINT32"));
}
float GgufFile::get_f32(std::string_view key) const {
  return impl_->to_float(key, impl_->require(key));
}
bool GgufFile::get_bool(std::string_view key) const {
  return impl_->to_bool(key, impl_->require(key));
}
std::string GgufFile::get_string(std::string_view key) const {
  return impl_->to_string(key, impl_->require(key));
}

std::optional<uint64_t> GgufFile::find_u64(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  return impl_->to_unsigned(key, *v, std::numeric_limits<uint64_t>::max(), "UINT64");
}
std::optional<uint32_t> GgufFile::find_u32(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(impl_->to_unsigned(key, *v, std::numeric_limits<uint32_t>::max(), "UINT32"));
}
std::optional<float> GgufFile::find_f32(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  return impl_->to_float(key, *v);
}
std::optional<bool> GgufFile::find_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  return impl_->to_bool(key, *v);
}
std::optional<std::string> GgufFile::find_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  return impl_->to_string(key, *v);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const Value& v = impl_->require(key);
  if (v.type != ValueType::ARRAY || v.elem_type != ValueType::STRING)
    impl_->type_error(key, "ARRAY[STRING]", v);
  std::vector<std::string> out;
  out.reserve(v.items.size());
  for (const Value& it : v.items) out.push_back(it.s);
  return out;
}

std::vector<int32_t> GgufFile::get_i32_array(std::string_view key) const {
  const Value& v = impl_->require(key);
  if (v.type != ValueType::ARRAY || v.elem_type != ValueType::INT32)
    impl_->type_error(key, "ARRAY[INT32]", v);
  std::vector<int32_t> out;
  out.reserve(v.items.size());
  for (const Value& it : v.items) out.push_back(static_cast<int32_t>(it.i));
  return out;
}

const std::vector<TensorInfo>& GgufFile::tensors() const {
  return impl_->tensors;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(std::string(name));
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

const uint8_t* GgufFile::tensor_data(const TensorInfo& t) const {
  return impl_->map + impl_->data_offset + t.offset;
}

void GgufFile::release_pages(const TensorInfo& t) const {
  if (!impl_->mapped) return;  // the caller's memory (from_memory): MADV_DONTNEED would zero it
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t begin = impl_->data_offset + t.offset;
  const uint64_t end = begin + t.n_bytes;
  // Only whole pages inside the tensor: its neighbours may still be in use.
  const uint64_t first = (begin + page - 1) / page * page;
  const uint64_t last = end / page * page;
  if (last <= first) return;
  madvise(const_cast<uint8_t*>(impl_->map) + first, last - first, MADV_DONTNEED);
}

}  // namespace dllm::gguf
