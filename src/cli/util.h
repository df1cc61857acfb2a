// Small helpers of the command line: wall-clock timing, peak memory, "did you mean" suggestions,
// token-id lists. Nothing here prints; printing belongs to the commands and main.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dllm::cli {

/// Milliseconds since construction (steady clock).
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// Peak resident set size of this process in bytes (getrusage ru_maxrss, which Linux reports in KiB).
uint64_t peak_rss_bytes();

/// "1.23 GiB", "456.0 MiB", "789 B": a byte count for humans.
std::string format_bytes(uint64_t n_bytes);

/// Levenshtein edit distance between two ASCII words.
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate `word` is probably a misspelling of, for "did you mean" hints: one that starts with
/// `word` (a prefix, "tok" -> "tokenize"), else the one at the smallest edit distance (first on ties)
/// provided that distance is at most 2 and smaller than the word's length, so "rnu" -> "run" and
/// "tset" -> "test" but "frobnicate" and "rm" get no suggestion. Empty when none is close.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

/// Logical CPUs this process may run on (sched_getaffinity, what `nproc` prints; else the online
/// CPUs); at least 1.
int logical_cpus();

/// Parses token ids written as decimal integers separated by spaces, commas, tabs or newlines
/// ("1 2 3", "1,2,3"). Throws dllm::UsageError naming `what`, the offending word and what it should
/// have been (`noun`: "token id", "position") on anything else (a non-number, a value outside int32).
std::vector<int32_t> parse_ids(std::string_view text, std::string_view what,
                               std::string_view noun = "token id");

/// Reads token ids from a file: `.i32` files are raw int32 little-endian (size a multiple of 4);
/// anything else is text parsed as in parse_ids. Throws dllm::Error naming the path when unreadable.
std::vector<int32_t> read_ids_file(const std::string& path);

/// Reads a file of f32 little-endian values (no header). Throws dllm::Error naming the path and `flag`
/// when it cannot be read or its size is not a multiple of 4.
std::vector<float> read_f32_file(const std::string& path, const std::string& flag);

/// Ids joined by single spaces.
std::string join_ids(const std::vector<int32_t>& ids);

}  // namespace dllm::cli
