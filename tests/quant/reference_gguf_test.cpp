// Decoders on real tensors: the reference GGUFs in ../shared/reference (made by llama.cpp's
// llama-quantize from F32 masters with known random weights, see its README.md).
//
// 1. Properties the generator guarantees: RMSNorm weights exactly 1; every 2-D weight drawn from
//    N(0, sigma^2) (token_embd 0.05, attn_q/attn_k 0.1, the rest 0.02; Dream biases 0.02), so the
//    dequantized tensor has mean ~0 and std ~sigma within sampling error plus what 4/6-bit
//    quantization can add.
// 2. Our decoders agree bit for bit with the test's own bit decoder (ref_decoders.h) on real rows.
// 3. Our decoders agree bit for bit with an independent implementation, the `gguf` PyPI package
//    (tests/quant/gguf_py_dequant.py), on rows of real tensors (read by its own GGUF parser) and on
//    random blocks of the types the reference files lack (Q8_0, Q5_K, F16, BF16).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "quant/ref_decoders.h"
#include "test_util.h"

namespace {

using dllm::gguf::GgmlType;
using dllm::gguf::GgufFile;
using dllm::gguf::TensorInfo;
using namespace dllm::quant;
using testref::Mutation;

const char* kFiles[] = {"tiny-llada-q4km.gguf", "tiny-dream-q4km.gguf"};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Standard deviation the generator used for a tensor (reference/README.md, "How the models were
/// made"); 0 for tensors it sets to constants (RMSNorm weights = 1).
double generator_sigma(const std::string& name) {
  if (ends_with(name, "_norm.weight")) return 0.0;
  if (name == "token_embd.weight") return 0.05;
  if (ends_with(name, "attn_q.weight") || ends_with(name, "attn_k.weight")) return 0.1;
  return 0.02;  // other 2-D weights and Dream's q/k/v biases
}

struct Stats {
  double n = 0, sum = 0, sumsq = 0;
  double min = INFINITY, max = -INFINITY;
  void add(const float* v, int64_t k) {
    for (int64_t i = 0; i < k; ++i) {
      n += 1, sum += v[i], sumsq += static_cast<double>(v[i]) * v[i];
      min = std::min(min, static_cast<double>(v[i])), max = std::max(max, static_cast<double>(v[i]));
    }
  }
  double mean() const { return sum / n; }
  double std() const { return std::sqrt(std::max(0.0, sumsq / n - mean() * mean())); }
};

/// Checks mean and std of `s` against N(0, sigma^2): 5 standard errors of sampling (std error of
/// the mean sigma/sqrt(n), of the std sigma/sqrt(2n)) plus a quantization allowance of 0.01 sigma
/// on the mean and 2% on the std. (Q4_K rounds to 16 levels spanning a sub-block of 32 values,
/// about 6 sigma wide: a step of ~0.4 sigma, uniform error ~0.12 sigma rms, which inflates the std
/// by under 1%; Q6_K's error is 4x smaller.) Returns "" when it holds, else what failed.
std::string check_gaussian(const std::string& name, const Stats& s, double sigma) {
  const double mean_tol = 5 * sigma / std::sqrt(s.n) + 0.01 * sigma;
  const double std_tol = 5 / std::sqrt(2 * s.n) + 0.02;
  std::string err;
  if (std::fabs(s.mean()) > mean_tol)
    err += name + ": mean " + std::to_string(s.mean()) + " beyond +-" + std::to_string(mean_tol) + "; ";
  if (std::fabs(s.std() / sigma - 1) > std_tol)
    err += name + ": std " + std::to_string(s.std()) + ", expected " + std::to_string(sigma) + " within " +
           std::to_string(100 * std_tol) + "%; ";
  return err;
}

/// Dequantizes a tensor row by row with the library (rows = ne[1] * ne[2] * ne[3]).
template <typename F>
void for_each_row(const GgufFile& f, const TensorInfo& t, F fn) {
  const uint8_t* data = f.tensor_data(t);
  const int64_t rows = t.n_elements() / t.ne[0];
  std::vector<float> row(t.ne[0]);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t.type, data + r * t.row_bytes(), row.data(), t.ne[0]);
    fn(r, row);
  }
}

TEST(ReferenceGguf, EveryTensorHasTheGeneratorsStatistics) {
  DLLM_REQUIRE_REFERENCE();
  for (const char* file : kFiles) {
    const GgufFile f = GgufFile::open(dllm::test::reference(file).string());
    int n_norm = 0, n_gauss = 0;
    double n_values = 0;
    for (const TensorInfo& t : f.tensors()) {
      ASSERT_TRUE(can_dequantize(t.type)) << file << ": " << t.name;
      Stats s;
      for_each_row(f, t, [&](int64_t, const std::vector<float>& row) { s.add(row.data(), row.size()); });
      n_values += s.n;
      const double sigma = generator_sigma(t.name);
      if (sigma == 0.0) {
        EXPECT_EQ(s.min, 1.0) << file << ": " << t.name;
        EXPECT_EQ(s.max, 1.0) << file << ": " << t.name;
        ++n_norm;
      } else {
        EXPECT_EQ(check_gaussian(t.name, s, sigma), "") << file;
        ++n_gauss;
      }
    }
    // 4 layers x 2 norms + output_norm; the rest are Gaussian.
    std::printf("%s: %zu tensors, %.0f values checked\n", file, f.tensors().size(), n_values);
    EXPECT_EQ(n_norm, 9) << file;
    EXPECT_EQ(n_norm + n_gauss, static_cast<int>(f.tensors().size())) << file;
  }
}

TEST(ReferenceGguf, StatisticsRejectBrokenDecoders) {
  DLLM_REQUIRE_REFERENCE();
  // The statistics check above must be able to fail: decode one real Q4_K and one Q6_K tensor with
  // mutated decoders and apply the same check.
  const GgufFile f = GgufFile::open(dllm::test::reference("tiny-llada-q4km.gguf").string());
  struct Case {
    const char* tensor;
    Mutation mut;
  };
  for (const Case& c :
       {Case{"blk.0.ffn_up.weight", Mutation::kDropMin}, Case{"blk.3.ffn_down.weight", Mutation::kNoOffset},
        Case{"blk.0.ffn_up.weight", Mutation::kNone}, Case{"blk.3.ffn_down.weight", Mutation::kNone}}) {
    const TensorInfo* t = f.find_tensor(c.tensor);
    ASSERT_NE(t, nullptr) << c.tensor;
    const testref::Geometry g = t->type == GgmlType::Q4_K ? testref::kQ4_K : testref::kQ6_K;
    ASSERT_TRUE(t->type == GgmlType::Q4_K || t->type == GgmlType::Q6_K) << c.tensor;
    const uint8_t* data = f.tensor_data(*t);
    Stats s;
    const int64_t n_blocks = t->n_elements() / g.block_values;
    std::vector<float> v(g.block_values);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* p = data + b * g.block_bytes;
      for (int i = 0; i < g.block_values; ++i)
        v[i] = static_cast<float>(g.block_bytes == 144 ? testref::q4_K_value(p, i, c.mut)
                                                       : testref::q6_K_value(p, i, c.mut));
      s.add(v.data(), g.block_values);
    }
    const std::string verdict = check_gaussian(c.tensor, s, generator_sigma(c.tensor));
    if (c.mut == Mutation::kNone)
      EXPECT_EQ(verdict, "") << "the test's own decoder must pass";
    else
      EXPECT_NE(verdict, "") << c.tensor << ": mutation " << static_cast<int>(c.mut)
                             << " passed the statistics check";
  }
}

TEST(ReferenceGguf, RowsMatchTheTestsBitDecoder) {
  DLLM_REQUIRE_REFERENCE();
  for (const char* file : kFiles) {
    const GgufFile f = GgufFile::open(dllm::test::reference(file).string());
    int checked = 0;
    for (const TensorInfo& t : f.tensors()) {
      if (t.type != GgmlType::Q4_K && t.type != GgmlType::Q6_K) continue;
      const testref::Geometry g = t.type == GgmlType::Q4_K ? testref::kQ4_K : testref::kQ6_K;
      const int64_t rows = std::min<int64_t>(8, t.n_elements() / t.ne[0]);
      const std::vector<uint8_t> bytes(f.tensor_data(t), f.tensor_data(t) + rows * t.row_bytes());
      const auto want = t.type == GgmlType::Q4_K ? testref::decode_all(bytes, g, testref::q4_K_value)
                                                 : testref::decode_all(bytes, g, testref::q6_K_value);
      std::vector<float> got(rows * t.ne[0]);
      dequantize_row(t.type, bytes.data(), got.data(), rows * t.ne[0]);
      size_t bad = 0;
      for (size_t i = 0; i < got.size(); ++i) bad += got[i] != static_cast<float>(want[i]);
      EXPECT_EQ(bad, 0u) << file << ": " << t.name;
      ++checked;
    }
    EXPECT_EQ(checked, 30) << file << ": expected 25 Q4_K + 5 Q6_K tensors";
  }
}

// ---------------------------------------------------------------------------------------------
// Cross-check with the gguf PyPI package.

void put_u32(std::string& s, uint32_t v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}
void put_u64(std::string& s, uint64_t v) {
  s.append(reinterpret_cast<const char*>(&v), 8);
}
void put_str(std::string& s, const std::string& v) {
  put_u64(s, v.size());
  s += v;
}

/// One request to the Python decoder and what our library says for it.
struct Request {
  std::string what;
  std::vector<float> ours;
};

/// Same bits, or both NaN.
bool same_value(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

TEST(ReferenceGguf, MatchesGgufPythonPackage) {
  DLLM_REQUIRE_REFERENCE();
  dllm::test::TempDir tmp;
  std::string in;
  std::vector<Request> reqs;

  // (a) Rows of real tensors, located by the Python package's own GGUF reader.
  for (const char* file : kFiles) {
    const std::string path = dllm::test::reference(file).string();
    const GgufFile f = GgufFile::open(path);
    bool seen_q4 = false;
    for (const TensorInfo& t : f.tensors()) {
      const bool pick = (t.type == GgmlType::Q4_K && !seen_q4) || t.type == GgmlType::Q6_K ||
                        t.name == "token_embd.weight" || t.name == "blk.0.attn_q.weight" ||
                        (t.type == GgmlType::F32 && t.n_dims == 1 && t.name.rfind("blk.0.", 0) == 0);
      if (!pick) continue;
      seen_q4 |= t.type == GgmlType::Q4_K;
      const int64_t rows = std::min<int64_t>(4, t.n_elements() / t.ne[0]);
      Request r{std::string(file) + ": " + t.name, std::vector<float>(rows * t.ne[0])};
      dequantize_row(t.type, f.tensor_data(t), r.ours.data(), rows * t.ne[0]);
      put_u32(in, 1);
      put_str(in, path);
      put_str(in, t.name);
      put_u64(in, rows);
      reqs.push_back(std::move(r));
    }
  }

  // (b) Random blocks of every supported type (fixed seed); f16 scales random normal halves.
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int> byte(0, 255), e(6, 20), m(0, 1023), sgn(0, 1);
  auto half = [&] { return static_cast<uint16_t>((sgn(rng) << 15) | (e(rng) << 10) | m(rng)); };
  struct Synth {
    GgmlType type;
    int block_bytes, block_values;
    std::vector<int> half_offsets;  // f16 fields to overwrite with sane values
  };
  for (const Synth& s : {Synth{GgmlType::Q8_0, 34, 32, {0}}, Synth{GgmlType::Q4_K, 144, 256, {0, 2}},
                         Synth{GgmlType::Q5_K, 176, 256, {0, 2}}, Synth{GgmlType::Q6_K, 210, 256, {208}},
                         Synth{GgmlType::F16, 2, 1, {}}, Synth{GgmlType::BF16, 2, 1, {}}}) {
    const int nb = s.block_values == 1 ? 4096 : 32;
    std::vector<uint8_t> bytes(static_cast<size_t>(nb) * s.block_bytes);
    for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
    for (int b = 0; b < nb; ++b)
      for (int off : s.half_offsets) {
        const uint16_t h = half();
        std::memcpy(&bytes[static_cast<size_t>(b) * s.block_bytes + off], &h, 2);
      }
    if (s.type == GgmlType::F16) {  // every F16 bit pattern, subnormals, inf and NaN included
      bytes.resize(2 * 65536);
      for (uint32_t h = 0; h < 65536; ++h)
        bytes[2 * h] = h & 0xff, bytes[2 * h + 1] = static_cast<uint8_t>(h >> 8);
    }
    const int64_t n = static_cast<int64_t>(bytes.size() / s.block_bytes) * s.block_values;
    Request r{"random " + dllm::gguf::type_name(s.type), std::vector<float>(n)};
    dequantize_row(s.type, bytes.data(), r.ours.data(), n);
    put_u32(in, 0);
    put_u32(in, static_cast<uint32_t>(s.type));
    put_u64(in, n);
    put_u64(in, bytes.size());
    in.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    reqs.push_back(std::move(r));
  }

  const std::string in_path = (tmp / "in.bin").string(), out_path = (tmp / "out.bin").string();
  std::ofstream(in_path, std::ios::binary) << in;
  const std::string script = std::string(DLLM_SOURCE_DIR) + "/tests/quant/gguf_py_dequant.py";
  const std::string cmd = "python3 '" + script + "' '" + in_path + "' '" + out_path + "'";
  const int status = std::system(cmd.c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 3 || rc == 127) {
    const char* allow = std::getenv("DLLM_ALLOW_SKIP_PY");
    const std::string why = rc == 127 ? "python3 not found" : "the gguf Python package is not installed";
    if (allow && std::string(allow) == "1") GTEST_SKIP() << why << " (DLLM_ALLOW_SKIP_PY=1)";
    FAIL() << why << ": this test compares our decoders with gguf.quants.dequantize; run "
           << "`pip install -r tests/requirements.txt`, or set DLLM_ALLOW_SKIP_PY=1 to skip it";
  }
  ASSERT_EQ(rc, 0) << "python decoder failed: " << cmd;

  const auto out = dllm::test::read_file(out_path);
  size_t pos = 0;
  size_t total = 0;
  for (const Request& r : reqs) {
    ASSERT_LE(pos + 8, out.size()) << "python output ends before " << r.what;
    uint64_t n;
    std::memcpy(&n, out.data() + pos, 8);
    pos += 8;
    ASSERT_EQ(n, r.ours.size()) << r.what;
    ASSERT_LE(pos + 4 * n, out.size()) << r.what;
    size_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
      float theirs;
      std::memcpy(&theirs, out.data() + pos + 4 * i, 4);
      if (!same_value(r.ours[i], theirs)) {
        if (bad < 3)
          ADD_FAILURE() << r.what << " value " << i << ": ours " << r.ours[i] << ", gguf-py " << theirs;
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0u) << r.what;
    pos += 4 * n;
    total += n;
  }
  EXPECT_EQ(pos, out.size());
  std::printf("gguf-py cross-check: %zu requests, %zu values, all bit-identical\n", reqs.size(), total);
}

}  // namespace
