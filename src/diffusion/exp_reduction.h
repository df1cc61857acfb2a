// The constants of the sampler's vector exp in double (exp_avx512.h on 8 lanes, dream_passes_avx2.cpp
// on 4): x = k ln2 + r with k = round(x log2 e) and |r| <= ln2 / 2, ln 2 in fdlibm's two parts (the high
// one exact in k ln2_hi for |k| < 2^11), e^r by its Taylor series to degree 13 (for |r| <= ln2 / 2 the
// next term is below 5e-18 of the result), 2^k from the exponent bits.
#pragma once

namespace dllm::diffusion {

inline constexpr double kLog2e = 1.4426950408889634;
inline constexpr double kLn2Hi = 6.93147180369123816490e-01;
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;
/// 1 / i! for i = 0..13.
inline constexpr double kExpInvFact[14] = {
    1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
    1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800};

}  // namespace dllm::diffusion
