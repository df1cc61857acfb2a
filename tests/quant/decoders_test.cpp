// Block decoders (Q8_0, Q4_K, Q5_K, Q6_K) against the independent f64 decoders of ref_decoders.h
// and against values the test packs itself from the layout description.
//
// Exact comparison: every library output must equal (float) of the exact f64 value. This holds
// because each format's formula has a single rounding in f32 (d * sc and dmin * m are exact
// products of an 11-bit f16 significand and a <= 8-bit integer, so is their product with a <= 6-bit
// quant), and the test keeps d/dmin exponents close enough that the f64 value is itself exact.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "quant/quant.h"
#include "quant/ref_decoders.h"

namespace {

using dllm::gguf::GgmlType;
using namespace dllm::quant;
using testref::Geometry;
using testref::Mutation;

void set_bit(uint8_t* p, int byte, int bit, int v) {
  p[byte] = static_cast<uint8_t>((p[byte] & ~(1 << bit)) | ((v & 1) << bit));
}
/// Writes the low `n` bits of `v` to bits [first, first + n) of byte `byte`.
void set_bits(uint8_t* p, int byte, int first, int n, int v) {
  for (int b = 0; b < n; ++b) set_bit(p, byte, first + b, (v >> b) & 1);
}
void put_le16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}

/// Number of values where `got` is not exactly (float) `want`; prints the first few.
size_t mismatches(const std::vector<float>& got, const std::vector<double>& want, const char* what,
                  bool print = true) {
  EXPECT_EQ(got.size(), want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] != static_cast<float>(want[i])) {
      if (print && bad < 5)
        ADD_FAILURE() << what << ": value " << i << " is " << got[i] << ", expected " << want[i];
      ++bad;
    }
  }
  return bad;
}

std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

std::vector<float> library_decode(GgmlType type, const std::vector<uint8_t>& bytes, Geometry g) {
  const int64_t n = static_cast<int64_t>(bytes.size() / g.block_bytes) * g.block_values;
  std::vector<float> out(n);
  dequantize_row(type, bytes.data(), out.data(), n);
  return out;
}

/// The comparison used for the library must reject each mutated decoder on the same data.
template <typename F>
void expect_mutants_rejected(const std::vector<uint8_t>& bytes, Geometry g, F value,
                             const std::vector<double>& want, std::initializer_list<Mutation> mutants) {
  for (Mutation m : mutants) {
    const auto wrong = to_float(testref::decode_all(bytes, g, value, m));
    EXPECT_GT(mismatches(wrong, want, "mutant", /*print=*/false), 0u)
        << "mutation " << static_cast<int>(m) << " was not detected: the test data does not exercise it";
  }
}

/// A random normal f16 with exponent field in [e_lo, e_hi] (value 2^(e-15) * [1, 2)), either sign.
uint16_t random_half(std::mt19937& rng, int e_lo, int e_hi, bool allow_negative = true) {
  std::uniform_int_distribution<int> e(e_lo, e_hi), m(0, 1023), s(0, allow_negative ? 1 : 0);
  return static_cast<uint16_t>((s(rng) << 15) | (e(rng) << 10) | m(rng));
}

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(byte(rng));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Hand-built blocks: the test packs intended values bit by bit, and the expected value of each
// element comes from the intended values, not from reading the bytes back.

/// Q4_K/Q5_K super-block as intended: scales and mins of the 8 sub-blocks and 256 quants.
struct KBlock {
  uint16_t d, dmin;
  int sc[8], m[8];
  int q[256];  // 0..15 (Q4_K) or 0..31 (Q5_K)
};

/// The 12 scale bytes, written per the layout description (see testref::k_scale6).
void pack_k_scales(uint8_t* p, const KBlock& b) {
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      set_bits(p, s, 0, 6, b.sc[s]);
      set_bits(p, s + 4, 0, 6, b.m[s]);
    } else {
      set_bits(p, s + 4, 0, 4, b.sc[s] & 15);
      set_bits(p, s + 4, 4, 4, b.m[s] & 15);
      set_bits(p, s - 4, 6, 2, b.sc[s] >> 4);
      set_bits(p, s, 6, 2, b.m[s] >> 4);
    }
  }
}

std::vector<uint8_t> pack_q4_K(const KBlock& b) {
  std::vector<uint8_t> out(144, 0);
  put_le16(&out[0], b.d);
  put_le16(&out[2], b.dmin);
  pack_k_scales(&out[4], b);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, l = i % 32;
    set_bits(&out[16], 32 * (s / 2) + l, 4 * (s % 2), 4, b.q[i]);
  }
  return out;
}

std::vector<uint8_t> pack_q5_K(const KBlock& b) {
  std::vector<uint8_t> out(176, 0);
  put_le16(&out[0], b.d);
  put_le16(&out[2], b.dmin);
  pack_k_scales(&out[4], b);
  for (int i = 0; i < 256; ++i) {
    const int s = i / 32, l = i % 32;
    set_bits(&out[48], 32 * (s / 2) + l, 4 * (s % 2), 4, b.q[i] & 15);
    set_bit(&out[16], l, s, b.q[i] >> 4);
  }
  return out;
}

std::vector<double> expected_k(const KBlock& b) {
  std::vector<double> v(256);
  const double d = testref::half_value(b.d), dmin = testref::half_value(b.dmin);
  for (int i = 0; i < 256; ++i) v[i] = d * b.sc[i / 32] * b.q[i] - dmin * b.m[i / 32];
  return v;
}

/// Scales and mins spread over the whole 6-bit range, with every combination of the two high bits
/// among sub-blocks 4..7 (these come from the other bytes), so a scale-index or bit-position
/// mix-up changes values by large factors.
KBlock hand_k_block(int qmax) {
  KBlock b{};
  b.d = 0x2a66;     // about 0.05
  b.dmin = 0x2c9a;  // about 0.07
  const int sc[8] = {1, 63, 2, 45, 17, 33, 58, 9};
  const int m[8] = {3, 0, 63, 12, 48, 29, 7, 22};
  for (int s = 0; s < 8; ++s) b.sc[s] = sc[s], b.m[s] = m[s];
  for (int i = 0; i < 256; ++i) b.q[i] = (7 * i + 3 + i / 32) % (qmax + 1);
  return b;
}

TEST(Q4K, HandBuiltBlockMatchesPackedValues) {
  const KBlock b = hand_k_block(15);
  const auto bytes = pack_q4_K(b);
  const auto want = expected_k(b);
  // The test's own decoder reads back what the test packed (checks the test, not the library).
  EXPECT_EQ(
      mismatches(to_float(testref::decode_all(bytes, testref::kQ4_K, testref::q4_K_value)), want, "testref"),
      0u);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q4_K, bytes, testref::kQ4_K), want, "dequantize_row(Q4_K)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ4_K, testref::q4_K_value, want,
                          {Mutation::kSwapNibbles, Mutation::kDropMin, Mutation::kScalesAsLow6});
}

TEST(Q5K, HandBuiltBlockMatchesPackedValues) {
  const KBlock b = hand_k_block(31);
  const auto bytes = pack_q5_K(b);
  const auto want = expected_k(b);
  EXPECT_EQ(
      mismatches(to_float(testref::decode_all(bytes, testref::kQ5_K, testref::q5_K_value)), want, "testref"),
      0u);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q5_K, bytes, testref::kQ5_K), want, "dequantize_row(Q5_K)"),
            0u);
  expect_mutants_rejected(
      bytes, testref::kQ5_K, testref::q5_K_value, want,
      {Mutation::kSwapNibbles, Mutation::kDropMin, Mutation::kScalesAsLow6, Mutation::kNoFifthBit});
}

struct Q6Block {
  uint16_t d;
  int sc[16];  // int8
  int q[256];  // 0..63, value = d * sc * (q - 32)
};

std::vector<uint8_t> pack_q6_K(const Q6Block& b) {
  std::vector<uint8_t> out(210, 0);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, g = (i % 128) / 32, l = i % 32;
    set_bits(out.data(), 64 * h + l + 32 * (g % 2), 4 * (g / 2), 4, b.q[i] & 15);
    set_bits(out.data(), 128 + 32 * h + l, 2 * g, 2, b.q[i] >> 4);
  }
  for (int j = 0; j < 16; ++j) out[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(b.sc[j]));
  put_le16(&out[208], b.d);
  return out;
}

TEST(Q6K, HandBuiltBlockMatchesPackedValues) {
  Q6Block b{};
  b.d = 0x1e0d;  // about 0.0064
  const int sc[16] = {1, -128, 127, -3, 64, 2, -77, 100, 5, -1, 33, -60, 120, 9, -20, 80};
  for (int j = 0; j < 16; ++j) b.sc[j] = sc[j];
  for (int i = 0; i < 256; ++i) b.q[i] = (11 * i + 5 + i / 64) % 64;
  const auto bytes = pack_q6_K(b);
  std::vector<double> want(256);
  for (int i = 0; i < 256; ++i) want[i] = testref::half_value(b.d) * b.sc[i / 16] * (b.q[i] - 32);
  EXPECT_EQ(
      mismatches(to_float(testref::decode_all(bytes, testref::kQ6_K, testref::q6_K_value)), want, "testref"),
      0u);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q6_K, bytes, testref::kQ6_K), want, "dequantize_row(Q6_K)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ6_K, testref::q6_K_value, want,
                          {Mutation::kNoOffset, Mutation::kQhPairsSwapped, Mutation::kScaleOf8});
}

TEST(Q80, HandBuiltBlockMatchesPackedValues) {
  std::vector<uint8_t> bytes(2 * 34, 0);
  std::vector<double> want;
  const uint16_t ds[2] = {0x3c00 /* 1.0 */, 0x9a00 /* negative, about -0.0029 */};
  for (int b = 0; b < 2; ++b) {
    put_le16(&bytes[34 * b], ds[b]);
    for (int i = 0; i < 32; ++i) {
      const int q = (i * 37 + b * 11) % 256 - 128;  // covers -128 and 127
      bytes[34 * b + 2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q));
      want.push_back(testref::half_value(ds[b]) * q);
    }
  }
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q8_0, bytes, testref::kQ8_0), want, "dequantize_row(Q8_0)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ8_0, testref::q8_0_value, want, {Mutation::kUnsigned});
}

// ---------------------------------------------------------------------------------------------
// Random blocks (fixed seed): all bytes random except the f16 scales, which are random normal
// halves whose exponents vary by up to 2^8 between blocks so per-block scaling is exercised.

TEST(Q4K, RandomBlocksMatchBitDecoder) {
  std::mt19937 rng(1234);
  const int nb = 64;
  auto bytes = random_bytes(rng, nb * 144);
  for (int b = 0; b < nb; ++b) {
    put_le16(&bytes[144 * b], random_half(rng, 8, 16));
    put_le16(&bytes[144 * b + 2], random_half(rng, 8, 16));
  }
  const auto want = testref::decode_all(bytes, testref::kQ4_K, testref::q4_K_value);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q4_K, bytes, testref::kQ4_K), want, "dequantize_row(Q4_K)"),
            0u);
  // The per-format entry point agrees with the dispatcher.
  std::vector<float> direct(nb * 256);
  dequantize_row_q4_K(reinterpret_cast<const block_q4_K*>(bytes.data()), direct.data(), nb * 256);
  EXPECT_EQ(mismatches(direct, want, "dequantize_row_q4_K"), 0u);
  expect_mutants_rejected(bytes, testref::kQ4_K, testref::q4_K_value, want,
                          {Mutation::kSwapNibbles, Mutation::kDropMin, Mutation::kScalesAsLow6});
}

TEST(Q5K, RandomBlocksMatchBitDecoder) {
  std::mt19937 rng(2345);
  const int nb = 64;
  auto bytes = random_bytes(rng, nb * 176);
  for (int b = 0; b < nb; ++b) {
    put_le16(&bytes[176 * b], random_half(rng, 8, 16));
    put_le16(&bytes[176 * b + 2], random_half(rng, 8, 16));
  }
  const auto want = testref::decode_all(bytes, testref::kQ5_K, testref::q5_K_value);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q5_K, bytes, testref::kQ5_K), want, "dequantize_row(Q5_K)"),
            0u);
  expect_mutants_rejected(
      bytes, testref::kQ5_K, testref::q5_K_value, want,
      {Mutation::kSwapNibbles, Mutation::kDropMin, Mutation::kScalesAsLow6, Mutation::kNoFifthBit});
}

TEST(Q6K, RandomBlocksMatchBitDecoder) {
  std::mt19937 rng(3456);
  const int nb = 64;
  auto bytes = random_bytes(rng, nb * 210);
  for (int b = 0; b < nb; ++b) put_le16(&bytes[210 * b + 208], random_half(rng, 8, 16));
  const auto want = testref::decode_all(bytes, testref::kQ6_K, testref::q6_K_value);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q6_K, bytes, testref::kQ6_K), want, "dequantize_row(Q6_K)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ6_K, testref::q6_K_value, want,
                          {Mutation::kNoOffset, Mutation::kQhPairsSwapped, Mutation::kScaleOf8});
}

TEST(Q80, RandomBlocksMatchBitDecoder) {
  std::mt19937 rng(4567);
  const int nb = 64;
  auto bytes = random_bytes(rng, nb * 34);
  for (int b = 0; b < nb; ++b) put_le16(&bytes[34 * b], random_half(rng, 1, 30));
  const auto want = testref::decode_all(bytes, testref::kQ8_0, testref::q8_0_value);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q8_0, bytes, testref::kQ8_0), want, "dequantize_row(Q8_0)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ8_0, testref::q8_0_value, want, {Mutation::kUnsigned});
}

TEST(Q50, RandomBlocksMatchBitDecoder) {
  std::mt19937 rng(5678);
  const int nb = 64;
  auto bytes = random_bytes(rng, nb * 22);
  for (int b = 0; b < nb; ++b) put_le16(&bytes[22 * b], random_half(rng, 1, 30));
  const auto want = testref::decode_all(bytes, testref::kQ5_0, testref::q5_0_value);
  EXPECT_EQ(mismatches(library_decode(GgmlType::Q5_0, bytes, testref::kQ5_0), want, "dequantize_row(Q5_0)"),
            0u);
  expect_mutants_rejected(bytes, testref::kQ5_0, testref::q5_0_value, want, {Mutation::kNoFifthBit});
  // The Q8_0 blocks it converts to decode to the same values (the matrices multiply those).
  std::vector<block_q8_0> q8(nb);
  q5_0_to_q8_0(reinterpret_cast<const block_q5_0*>(bytes.data()), q8.data(), nb * 32);
  std::vector<float> conv(nb * 32);
  dequantize_row_q8_0(q8.data(), conv.data(), nb * 32);
  EXPECT_EQ(mismatches(conv, want, "q5_0_to_q8_0"), 0u);
}

// ---------------------------------------------------------------------------------------------
// Dispatcher contract.

TEST(DequantizeRow, SupportedTypes) {
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q5_0,
                     GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
    EXPECT_TRUE(can_dequantize(t)) << static_cast<int>(t);
  for (GgmlType t :
       {GgmlType::Q4_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q8_K, GgmlType::IQ4_XS, GgmlType::I32})
    EXPECT_FALSE(can_dequantize(t)) << static_cast<int>(t);
}

TEST(DequantizeRow, UnsupportedTypeThrowsNamingIt) {
  std::vector<uint8_t> bytes(1024, 0);
  std::vector<float> out(256);
  try {
    dequantize_row(GgmlType::Q3_K, bytes.data(), out.data(), 256);
    FAIL() << "no exception";
  } catch (const dllm::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q3_K"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Q4_K"), std::string::npos)
        << "should list the supported types: " << e.what();
  }
}

TEST(DequantizeRow, LengthNotMultipleOfBlockThrows) {
  std::vector<uint8_t> bytes(1024, 0);
  std::vector<float> out(300);
  EXPECT_THROW(dequantize_row(GgmlType::Q4_K, bytes.data(), out.data(), 300), dllm::Error);
  EXPECT_THROW(dequantize_row(GgmlType::Q8_0, bytes.data(), out.data(), 33), dllm::Error);
  EXPECT_NO_THROW(dequantize_row(GgmlType::Q8_0, bytes.data(), out.data(), 64));
  EXPECT_NO_THROW(dequantize_row(GgmlType::F16, bytes.data(), out.data(), 3));
}

TEST(DequantizeRow, F32IsCopied) {
  const std::vector<float> in = {1.5f, -0.0f, 3.25e-38f, -7.0f};
  std::vector<float> out(4, 99.0f);
  dequantize_row(GgmlType::F32, in.data(), out.data(), 4);
  EXPECT_EQ(0, std::memcmp(in.data(), out.data(), sizeof(float) * 4));
}

}  // namespace
