// Helpers shared by the tests: where the reference data lives, temporary files, running the binary.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"

namespace dllm::test {

/// The shared/ folder beside the checkout ($DLLM_SHARED overrides, for CI layouts).
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("DLLM_SHARED")) return env;
  return DLLM_SHARED_DIR;
}

/// ../shared/reference/<rel>.
inline std::filesystem::path reference(const std::string& rel) {
  return shared_dir() / "reference" / rel;
}

/// Why the reference data cannot be read, for a skip: "" when shared_dir()/reference is a folder.
/// Only a missing folder skips; a missing file inside a present one fails the test that reads it.
inline std::string missing_reference() {
  const std::filesystem::path dir = shared_dir() / "reference";
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return "";
  return "needs the reference data, and " + dir.string() +
         " is not a folder: put the shared/ folder next to the checkout, or set DLLM_SHARED=/path/to/shared";
}

}  // namespace dllm::test

/// First statement of a test (or a fixture's SetUp) that reads ../shared/reference: skips it, with
/// the reason, where the reference data is absent (a fresh clone without ../shared).
#define DLLM_REQUIRE_REFERENCE()                                                                 \
  do {                                                                                           \
    if (const std::string why_missing = ::dllm::test::missing_reference(); !why_missing.empty()) \
      GTEST_SKIP() << why_missing;                                                               \
  } while (0)

namespace dllm::test {

/// Whole file as bytes.
/// n values drawn from N(0, scale^2) by std::mt19937(seed): test inputs that are the same on every run.
inline std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<char> read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// The names of the entries of `dir`, sorted: what a test expects a write to have left there.
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dllm-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Expects `f` to throw dllm::Error (or a subclass) with exactly `message`; a test failure otherwise.
template <typename F>
void expect_error(F&& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

}  // namespace dllm::test
