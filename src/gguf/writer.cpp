// GGUF writer; the byte layout mirrors the reader in gguf.cpp (see the comment at its top).
#include "gguf/writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "base/error.h"

namespace dllm::gguf {

namespace {

Value scalar(ValueType t) {
  Value v;
  v.type = t;
  return v;
}

class Bytes {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    std::memcpy(buf_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void put_value(const Value& v) {
    switch (v.type) {
      case ValueType::UINT8:
        put<uint8_t>(static_cast<uint8_t>(v.u));
        break;
      case ValueType::INT8:
        put<int8_t>(static_cast<int8_t>(v.i));
        break;
      case ValueType::UINT16:
        put<uint16_t>(static_cast<uint16_t>(v.u));
        break;
      case ValueType::INT16:
        put<int16_t>(static_cast<int16_t>(v.i));
        break;
      case ValueType::UINT32:
        put<uint32_t>(static_cast<uint32_t>(v.u));
        break;
      case ValueType::INT32:
        put<int32_t>(static_cast<int32_t>(v.i));
        break;
      case ValueType::UINT64:
        put<uint64_t>(v.u);
        break;
      case ValueType::INT64:
        put<int64_t>(v.i);
        break;
      case ValueType::FLOAT32:
        put<float>(static_cast<float>(v.f));
        break;
      case ValueType::FLOAT64:
        put<double>(v.f);
        break;
      case ValueType::BOOL:
        put<uint8_t>(v.u ? 1 : 0);
        break;
      case ValueType::STRING:
        put_string(v.s);
        break;
      case ValueType::ARRAY:
        put<uint32_t>(static_cast<uint32_t>(v.elem_type));
        put<uint64_t>(v.items.size());
        for (const Value& it : v.items) put_value(it);
        break;
      default:
        throw Error("GgufWriter: invalid value type " + std::to_string(static_cast<uint32_t>(v.type)));
    }
  }
  void pad_to(uint64_t alignment) {
    while (buf_.size() % alignment) buf_.push_back(0);
  }
  std::vector<uint8_t>& buf() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

void check_array(const Value& v, const std::string& key) {
  if (v.type == ValueType::ARRAY) {
    for (const Value& it : v.items) {
      if (it.type != v.elem_type)
        throw Error("GgufWriter: array '" + key + "' of " + value_type_name(v.elem_type) + " holds a " +
                    value_type_name(it.type));
      check_array(it, key);
    }
  } else if (static_cast<uint32_t>(v.type) >= static_cast<uint32_t>(ValueType::kSentinel)) {
    throw Error("GgufWriter: key '" + key + "' has an invalid value type");
  }
}

constexpr size_t kChunkBytes = size_t{4} << 20;

}  // namespace

Value make_u8(uint8_t v) {
  Value r = scalar(ValueType::UINT8);
  r.u = v;
  return r;
}
Value make_i8(int8_t v) {
  Value r = scalar(ValueType::INT8);
  r.i = v;
  return r;
}
Value make_u16(uint16_t v) {
  Value r = scalar(ValueType::UINT16);
  r.u = v;
  return r;
}
Value make_i16(int16_t v) {
  Value r = scalar(ValueType::INT16);
  r.i = v;
  return r;
}
Value make_u32(uint32_t v) {
  Value r = scalar(ValueType::UINT32);
  r.u = v;
  return r;
}
Value make_i32(int32_t v) {
  Value r = scalar(ValueType::INT32);
  r.i = v;
  return r;
}
Value make_u64(uint64_t v) {
  Value r = scalar(ValueType::UINT64);
  r.u = v;
  return r;
}
Value make_i64(int64_t v) {
  Value r = scalar(ValueType::INT64);
  r.i = v;
  return r;
}
Value make_f32(float v) {
  Value r = scalar(ValueType::FLOAT32);
  r.f = v;
  return r;
}
Value make_f64(double v) {
  Value r = scalar(ValueType::FLOAT64);
  r.f = v;
  return r;
}
Value make_bool(bool v) {
  Value r = scalar(ValueType::BOOL);
  r.u = v ? 1 : 0;
  return r;
}
Value make_string(std::string v) {
  Value r = scalar(ValueType::STRING);
  r.s = std::move(v);
  return r;
}
Value make_array(ValueType elem_type, std::vector<Value> items) {
  Value r = scalar(ValueType::ARRAY);
  r.elem_type = elem_type;
  r.items = std::move(items);
  return r;
}

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3)
    throw Error("GgufWriter: unsupported GGUF version " + std::to_string(version) + " (supported: 2, 3)");
}

void GgufWriter::set_alignment(uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 ||
      alignment > std::numeric_limits<uint32_t>::max())
    throw Error("GgufWriter: alignment " + std::to_string(alignment) + " is not a nonzero power of two");
  alignment_ = alignment;
  for (size_t k = 0; k < kv_.size(); ++k) {
    if (kv_[k].key == "general.alignment") {
      kv_.erase(kv_.begin() + static_cast<ptrdiff_t>(k));
      break;
    }
  }
  if (alignment != 32) add_kv("general.alignment", make_u32(static_cast<uint32_t>(alignment)));
}

void GgufWriter::add_kv(const std::string& key, Value v) {
  for (const KeyValue& kv : kv_)
    if (kv.key == key) throw Error("GgufWriter: duplicate metadata key '" + key + "'");
  check_array(v, key);
  kv_.push_back(KeyValue{key, std::move(v)});
}

void GgufWriter::add_u8(const std::string& key, uint8_t v) {
  add_kv(key, make_u8(v));
}
void GgufWriter::add_i8(const std::string& key, int8_t v) {
  add_kv(key, make_i8(v));
}
void GgufWriter::add_u16(const std::string& key, uint16_t v) {
  add_kv(key, make_u16(v));
}
void GgufWriter::add_i16(const std::string& key, int16_t v) {
  add_kv(key, make_i16(v));
}
void GgufWriter::add_u32(const std::string& key, uint32_t v) {
  add_kv(key, make_u32(v));
}
void GgufWriter::add_i32(const std::string& key, int32_t v) {
  add_kv(key, make_i32(v));
}
void GgufWriter::add_u64(const std::string& key, uint64_t v) {
  add_kv(key, make_u64(v));
}
void GgufWriter::add_i64(const std::string& key, int64_t v) {
  add_kv(key, make_i64(v));
}
void GgufWriter::add_f32(const std::string& key, float v) {
  add_kv(key, make_f32(v));
}
void GgufWriter::add_f64(const std::string& key, double v) {
  add_kv(key, make_f64(v));
}
void GgufWriter::add_bool(const std::string& key, bool v) {
  add_kv(key, make_bool(v));
}
void GgufWriter::add_string(const std::string& key, const std::string& v) {
  add_kv(key, make_string(v));
}
void GgufWriter::add_value(const std::string& key, Value v) {
  add_kv(key, std::move(v));
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (const std::string& s : v) items.push_back(make_string(s));
  add_kv(key, make_array(ValueType::STRING, std::move(items)));
}
void GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (int32_t x : v) items.push_back(make_i32(x));
  add_kv(key, make_array(ValueType::INT32, std::move(items)));
}
void GgufWriter::add_u32_array(const std::string& key, const std::vector<uint32_t>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (uint32_t x : v) items.push_back(make_u32(x));
  add_kv(key, make_array(ValueType::UINT32, std::move(items)));
}
void GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (float x : v) items.push_back(make_f32(x));
  add_kv(key, make_array(ValueType::FLOAT32, std::move(items)));
}

uint64_t GgufWriter::tensor_bytes(GgmlType type, const std::vector<int64_t>& ne) {
  const TypeTraits* tr = type_traits(static_cast<uint32_t>(type));
  if (!tr) throw Error("GgufWriter: unknown ggml type " + type_name(type));
  if (ne.empty() || ne.size() > 4)
    throw Error("GgufWriter: a tensor needs 1 to 4 dims, got " + std::to_string(ne.size()));
  uint64_t n = 1;
  for (int64_t d : ne) {
    if (d <= 0) throw Error("GgufWriter: tensor dims must be positive, got " + std::to_string(d));
    n *= static_cast<uint64_t>(d);
  }
  if (ne[0] % tr->block_size != 0)
    throw Error("GgufWriter: ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + tr->name +
                " block size " + std::to_string(tr->block_size));
  return n / static_cast<uint64_t>(tr->block_size) * tr->type_size;
}

GgufWriter::Tensor& GgufWriter::new_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne) {
  for (const Tensor& t : tensors_)
    if (t.name == name) throw Error("GgufWriter: duplicate tensor name '" + name + "'");
  Tensor t;
  t.name = name;
  t.type = type;
  t.n_bytes = tensor_bytes(type, ne);
  t.ne = std::move(ne);
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne, const void* data,
                            size_t n_bytes) {
  const uint64_t expected = tensor_bytes(type, ne);
  if (n_bytes != expected)
    throw Error("GgufWriter: tensor '" + name + "' of type " + type_name(type) + " needs " +
                std::to_string(expected) + " bytes, got " + std::to_string(n_bytes));
  Tensor& t = new_tensor(name, type, std::move(ne));
  const auto* p = static_cast<const uint8_t*>(data);
  t.data.assign(p, p + n_bytes);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                            TensorFill fill) {
  if (!fill) throw Error("GgufWriter: tensor '" + name + "' has no fill function");
  Tensor& t = new_tensor(name, type, std::move(ne));
  t.fill = std::move(fill);
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  // Tensor offsets follow from the sizes and alignment_, so set_alignment may come at any time.
  Bytes b;
  b.put<uint32_t>(0x46554747u);  // "GGUF" little-endian
  b.put<uint32_t>(version_);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kv_.size());
  for (const KeyValue& kv : kv_) {
    b.put_string(kv.key);
    b.put<uint32_t>(static_cast<uint32_t>(kv.value.type));
    b.put_value(kv.value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    b.put_string(t.name);
    b.put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) b.put<int64_t>(d);
    b.put<uint32_t>(static_cast<uint32_t>(t.type));
    b.put<uint64_t>(offset);
    offset += t.n_bytes;
    offset += (alignment_ - offset % alignment_) % alignment_;
  }
  b.pad_to(alignment_);
  return std::move(b.buf());
}

uint64_t GgufWriter::data_offset() const {
  return header_bytes().size();
}

template <typename Sink>
void GgufWriter::emit(Sink& sink) const {
  std::vector<uint8_t> head = header_bytes();
  sink(head.data(), head.size());
  std::vector<uint8_t> chunk;
  const std::vector<uint8_t> zeros(alignment_, 0);
  uint64_t pos = 0;  // within the data section
  for (const Tensor& t : tensors_) {
    const uint64_t pad = (alignment_ - pos % alignment_) % alignment_;
    if (pad) sink(zeros.data(), pad);
    pos += pad;
    if (t.fill) {
      chunk.resize(std::min<uint64_t>(kChunkBytes, t.n_bytes));
      for (uint64_t off = 0; off < t.n_bytes; off += chunk.size()) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), t.n_bytes - off));
        t.fill(chunk.data(), off, n);
        sink(chunk.data(), n);
      }
    } else {
      sink(t.data.data(), t.data.size());
    }
    pos += t.n_bytes;
  }
}

void GgufWriter::write(const std::string& path) const {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error("cannot create " + path + ": " + std::strerror(errno));
  bool ok = true;
  auto sink = [&](const uint8_t* p, size_t n) {
    if (ok && n && std::fwrite(p, 1, n, f) != n) ok = false;
  };
  try {
    emit(sink);
  } catch (...) {
    std::fclose(f);
    throw;
  }
  if (std::fclose(f) != 0) ok = false;
  if (!ok) throw Error("cannot write " + path + ": " + std::strerror(errno) + " (disk full?)");
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  auto sink = [&](const uint8_t* p, size_t n) { out.insert(out.end(), p, p + n); };
  emit(sink);
  return out;
}

}  // namespace dllm::gguf
