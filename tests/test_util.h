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
