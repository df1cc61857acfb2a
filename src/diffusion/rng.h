// The samplers' random numbers: xoshiro256** streams seeded through splitmix64, with the uniform
// distribution written out here (std:: distributions differ across standard libraries, so the same
// seed would not give the same text everywhere). Each draw belongs to a stream keyed by
// (seed, purpose, step, position): the numbers a position sees do not depend on the thread count,
// on the order rows are processed in, or on how many other rows there are.
#pragma once

#include <cstdint>

namespace dllm::diffusion {

/// splitmix64 (Steele, Lea, Flood 2014; Vigna's reference constants): a 64-bit mixer/generator.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// What a stream is used for: separate purposes never share numbers.
enum class RngPurpose : uint64_t {
  kGumbel = 1,          ///< LLaDA add_gumbel_noise: one uniform per vocabulary id, in id order
  kRandomRemask = 2,    ///< LLaDA remasking=random: one uniform per position
  kCategorical = 3,     ///< Dream sample_tokens at temperature > 0: one uniform per position
  kOriginTransfer = 4,  ///< Dream alg=origin: the Bernoulli(1 - s/t) reveal draw per position
  kAlgTemp = 5,         ///< Dream alg_temp > 0: the multinomial over positions, one stream per step
};

/// xoshiro256** 1.0 (Blackman, Vigna), state filled from splitmix64 of a key.
class Rng {
 public:
  explicit Rng(uint64_t key) {
    uint64_t sm = key;
    for (auto& w : s_) w = splitmix64(sm);
  }
  /// The stream for (seed, purpose, step, position); position -1 for per-step streams.
  static Rng stream(uint64_t seed, RngPurpose purpose, int64_t step, int64_t position) {
    uint64_t k = seed;
    uint64_t h = splitmix64(k) ^ static_cast<uint64_t>(purpose);
    h = splitmix64(h) ^ static_cast<uint64_t>(step);
    h = splitmix64(h) ^ static_cast<uint64_t>(position);
    return Rng(splitmix64(h));
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in the open interval (0, 1): 53 random bits, offset by half a unit so that 0 (whose
  /// log is -inf in the Gumbel formula) cannot occur. Every value is exactly representable.
  double uniform_open() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace dllm::diffusion
