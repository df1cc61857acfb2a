// `dllm inspect` printer; see inspect.h for the layout of the output.
#include "gguf/inspect.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "base/escape.h"

namespace dllm::gguf {

namespace {

constexpr size_t kMaxStringBytes = 64;  // longer strings are cut and show their byte count
constexpr size_t kMaxArrayItems = 6;    // arrays show this many items

/// Quoted, with ", \ , control bytes and invalid UTF-8 escaped (escape_text); cut to at most `max`
/// bytes at a UTF-8 boundary.
std::string quote(const std::string& s, size_t max) {
  size_t n = s.size();
  if (n > max) {
    n = max;
    // Not inside a code point: back up over at most 3 continuation bytes (more are invalid anyway).
    for (int k = 0; k < 3 && n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80; ++k) --n;
  }
  std::string out = "\"" + escape_text(std::string_view(s).substr(0, n), true, '"') + "\"";
  if (n < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string type_string(const Value& v) {
  if (v.type != ValueType::ARRAY) return value_type_name(v.type);
  // Nested arrays show the element type of the first item, e.g. ARRAY[ARRAY[INT32]].
  if (v.elem_type == ValueType::ARRAY && !v.items.empty()) return "ARRAY[" + type_string(v.items[0]) + "]";
  return std::string("ARRAY[") + value_type_name(v.elem_type) + "]";
}

/// Fewest significant digits that read back as the same float (1e-05, not 9.99999975e-06).
std::string shortest_float(double x, bool single) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    const double back = std::strtod(buf, nullptr);
    if (single ? static_cast<float>(back) == static_cast<float>(x) : back == x) break;
  }
  return buf;
}

std::string format(const Value& v, size_t max_string) {
  switch (v.type) {
    case ValueType::UINT8:
    case ValueType::UINT16:
    case ValueType::UINT32:
    case ValueType::UINT64:
      return std::to_string(v.u);
    case ValueType::INT8:
    case ValueType::INT16:
    case ValueType::INT32:
    case ValueType::INT64:
      return std::to_string(v.i);
    case ValueType::FLOAT32:
      return shortest_float(v.f, true);
    case ValueType::FLOAT64:
      return shortest_float(v.f, false);
    case ValueType::BOOL:
      return v.u ? "true" : "false";
    case ValueType::STRING:
      return quote(v.s, max_string);
    case ValueType::ARRAY: {
      std::string out = std::to_string(v.items.size()) + (v.items.size() == 1 ? " item: [" : " items: [");
      const size_t n = std::min(v.items.size(), kMaxArrayItems);
      for (size_t k = 0; k < n; ++k) {
        if (k) out += ", ";
        const Value& it = v.items[k];
        // Appended piecewise: GCC 12 gives a false -Wrestrict on "[" + std::string.
        if (it.type == ValueType::ARRAY) out += '[';
        out += format(it, 24);
        if (it.type == ValueType::ARRAY) out += ']';
      }
      if (v.items.size() > n) out += ", ...";
      return out + "]";
    }
    default:
      return "?";
  }
}

std::string shape(const TensorInfo& t) {
  std::string s = "[";
  const uint32_t nd = t.n_dims == 0 ? 1 : t.n_dims;
  for (uint32_t d = 0; d < nd; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.ne[d]);
  }
  return s + "]";
}

}  // namespace

std::string format_value(const Value& v) {
  return format(v, kMaxStringBytes);
}

void print_inspect(const GgufFile& file, std::ostream& out) {
  out << "file: " << file.path() << "\n";
  out << "GGUF version: " << file.version() << "\n";
  out << "file size: " << file.file_size() << " bytes\n";
  out << "alignment: " << file.alignment() << "\n";
  out << "tensor data offset: " << file.data_offset() << "\n";

  out << "\nmetadata: " << file.metadata().size() << " keys\n";
  // Keys and tensor names come from the file: escaped like string values (no raw control bytes or
  // invalid UTF-8 on the terminal), backslashes doubled so the printed name reads back unambiguously.
  std::vector<std::string> keys;
  size_t key_width = 0;
  for (const KeyValue& kv : file.metadata()) {
    keys.push_back(escape_text(kv.key, true));
    key_width = std::max(key_width, keys.back().size());
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    const KeyValue& kv = file.metadata()[k];
    const std::string t = type_string(kv.value);
    out << "  " << keys[k] << std::string(key_width - keys[k].size() + 2, ' ') << t
        << std::string(t.size() < 16 ? 16 - t.size() : 1, ' ') << format_value(kv.value) << "\n";
  }

  struct Count {
    uint64_t n = 0, bytes = 0;
  };
  std::map<uint32_t, Count> per_type;
  uint64_t total_bytes = 0, total_elements = 0;
  for (const TensorInfo& t : file.tensors()) {
    Count& c = per_type[static_cast<uint32_t>(t.type)];
    ++c.n;
    c.bytes += t.n_bytes;
    total_bytes += t.n_bytes;
    total_elements += static_cast<uint64_t>(t.n_elements());
  }
  out << "\ntensor types:\n";
  for (const auto& [id, c] : per_type) {
    char line[128];
    std::snprintf(line, sizeof line, "  %-8s %6llu tensors %14llu bytes\n", type_name(id).c_str(),
                  static_cast<unsigned long long>(c.n), static_cast<unsigned long long>(c.bytes));
    out << line;
  }
  {
    char line[160];
    std::snprintf(line, sizeof line, "  %-8s %6zu tensors %14llu bytes, %llu elements\n", "total",
                  file.tensors().size(), static_cast<unsigned long long>(total_bytes),
                  static_cast<unsigned long long>(total_elements));
    out << line;
  }

  out << "\ntensors: " << file.tensors().size() << " (shape in ggml order: ne0 = row length)\n";
  std::vector<std::string> names;
  size_t name_width = 4;
  for (const TensorInfo& t : file.tensors()) {
    names.push_back(escape_text(t.name, true));
    name_width = std::max(name_width, names.back().size());
  }
  const std::vector<TensorInfo>& ts = file.tensors();
  for (size_t k = 0; k < ts.size(); ++k) {
    const TensorInfo& t = ts[k];
    char head[32];
    std::snprintf(head, sizeof head, "  %5zu  ", k);
    const std::string tn = type_name(t.type);
    const std::string sh = shape(t);
    out << head << names[k] << std::string(name_width - names[k].size() + 2, ' ') << tn
        << std::string(tn.size() < 8 ? 8 - tn.size() : 1, ' ') << sh
        << std::string(sh.size() < 20 ? 20 - sh.size() : 1, ' ') << t.n_bytes << " bytes at offset "
        << file.data_offset() + t.offset << "\n";
  }
}

}  // namespace dllm::gguf
