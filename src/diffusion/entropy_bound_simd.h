// The entropy-bound row's exp and p log p passes on AVX-512 (entropy_bound_avx512.cpp), for eb_rows
// (entropy_bound.h). Each value is computed in double and rounded once to float, so it is the
// correctly rounded float of the exact value except within about 1e-15 of a rounding boundary, where
// glibc's expf / logf (0.502 ulp) may round the other way; the float divisions and products are the
// scalar path's. Internal to src/diffusion; call only where the CPU has AVX-512 F/BW/VL/DQ/VNNI.
#pragma once

#include <cstdint>

namespace dllm::diffusion {

/// e[i] = exp(row[i] * temp_inv - m) for i < n, the argument in float as the scalar path computes it.
void eb_exp_avx512(const float* row, int64_t n, float temp_inv, float m, float* e);

/// p[i] = e[i] / Z and t[i] = p[i] * log(p[i]) for i < n (t is NaN where p is 0 or NaN).
void eb_plogp_avx512(const float* e, int64_t n, float Z, float* p, float* t);

}  // namespace dllm::diffusion
