// Helpers of the command line; see util.h.
#include "cli/util.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "base/error.h"

namespace dllm::cli {

uint64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::string format_bytes(uint64_t n_bytes) {
  char buf[64];
  const double b = static_cast<double>(n_bytes);
  if (n_bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1ull << 30));
  } else if (n_bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ull << 20));
  } else if (n_bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n_bytes));
  }
  return buf;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    // A prefix ("tok" for "tokenize") is the strongest hint, whatever the length difference.
    const size_t d = (!word.empty() && c.rfind(word, 0) == 0) ? 0 : edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Two edits cover a typo or a swapped pair ("rnu"); more means a different word. A distance equal
  // to the word's length would replace every letter ("rm" -> "run" is not a hint).
  if (best_d > 2 || (best_d > 0 && best_d >= word.size())) return "";
  return best;
}

int logical_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

std::vector<int32_t> parse_ids(std::string_view text, std::string_view what, std::string_view noun) {
  std::vector<int32_t> ids;
  size_t i = 0;
  auto is_sep = [](char c) { return c == ' ' || c == ',' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < text.size()) {
    if (is_sep(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !is_sep(text[j])) ++j;
    const std::string_view word = text.substr(i, j - i);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || ptr != word.data() + word.size() || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max()) {
      // Quoted printable and short: a binary file's bytes must not reach the terminal (or end the
      // message at a NUL).
      std::string shown;
      for (const char ch : word.substr(0, 24)) {
        const auto u = static_cast<unsigned char>(ch);
        if (u >= 0x20 && u < 0x7f) {
          shown += ch;
        } else {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", u);
          shown += hex;
        }
      }
      if (word.size() > 24) shown += "...";
      const size_t sign = word[0] == '-' ? 1 : 0;
      const bool whole =
          word.size() > sign && word.find_first_not_of("0123456789", sign) == std::string_view::npos;
      if (whole) {  // a number, only too large for one
        throw UsageError(std::string(what) + ": " + shown + " is out of range for a " + std::string(noun) +
                         " (at most " + std::to_string(std::numeric_limits<int32_t>::max()) + ")");
      }
      throw UsageError(std::string(what) + ": '" + shown + "' is not a " + std::string(noun) +
                       " (expected integers separated by spaces or commas)");
    }
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  return ids;
}

std::vector<int32_t> read_ids_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw Error("cannot read token file " + path + " (" + std::strerror(errno) +
                "): check the path given to --tokens-file");
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const bool binary = path.size() >= 4 && path.compare(path.size() - 4, 4, ".i32") == 0;
  if (!binary) {
    try {
      return parse_ids(bytes, path);
    } catch (const UsageError& e) {
      // The flags were fine; the file's content is what is wrong (exit 1, as for other bad files).
      throw Error(std::string(e.what()) + "; a binary file of int32 ids must end in .i32");
    }
  }
  if (bytes.size() % 4 != 0) {
    throw Error("token file " + path + " has " + std::to_string(bytes.size()) +
                " bytes, not a multiple of 4 (.i32 files hold int32 little-endian ids)");
  }
  std::vector<int32_t> ids(bytes.size() / 4);
  for (size_t k = 0; k < ids.size(); ++k) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * k);
    ids[k] = static_cast<int32_t>(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                                  uint32_t(p[3]) << 24);
  }
  return ids;
}

std::vector<float> read_f32_file(const std::string& path, const std::string& flag) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error("cannot read " + path + " (" + std::strerror(errno) + "): check the path given to " + flag);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 != 0) {
    throw Error(flag + ": " + path + " has " + std::to_string(bytes.size()) +
                " bytes, not a multiple of 4 (f32 little-endian values)");
  }
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) out += ' ';
    out += std::to_string(ids[k]);
  }
  return out;
}

}  // namespace dllm::cli
