// The two full-vocabulary passes of LLaDA's greedy row (row_ops.cpp llada_row): the largest allowed
// logit and the softmax denominator. A row is n_vocab (126,464 for LLaDA) f32 logits, and a step
// makes one per masked position of the block, so these loops were most of the sampler's time with
// glibc's scalar exp. Internal to src/diffusion; tests call each path directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/isa.h"

namespace dllm::diffusion {

/// The path the sums below run for the kernel path `isa` (SamplerParams::isa, from choose_isa):
/// kAvx512Vnni (and kAmx, whose vector code is AVX-512) runs the AVX-512 loops, every other path the
/// portable ones (there is no AVX2 version).
/// `isa` must be one this CPU supports (check_params refuses another).
Isa row_sums_path(Isa isa);

/// Largest logits[i] with allowed[i] != 0; NaN logits are skipped; -inf when none qualifies. Runs
/// row_sums_path(isa).
float max_allowed(Isa isa, const float* logits, const uint8_t* allowed, size_t n);

/// z = sum over i with allowed[i] != 0 of exp(logits[i] - m) in f64, for m >= every allowed logit
/// (a larger one counts as m). Terms below e^-708 and NaN logits count 0: a term under 1e-307 of the
/// largest one (1) cannot change an f64 sum that contains it. Runs row_sums_path(isa).
double sum_exp_shifted(Isa isa, const float* logits, const uint8_t* allowed, size_t n, double m);

/// The portable loops (std::exp).
float max_allowed_scalar(const float* logits, const uint8_t* allowed, size_t n);
double sum_exp_shifted_scalar(const float* logits, const uint8_t* allowed, size_t n, double m);

/// AVX-512 (8 f64 / 16 f32 lanes; row_sums_avx512.cpp). exp as Cody-Waite reduction plus a degree-13
/// Taylor polynomial: within 4 ulp of std::exp (row_sums_test checks that bound). Call only when the
/// CPU has every AVX-512 feature that file is compiled with (F, BW, VL, DQ, VNNI).
float max_allowed_avx512(const float* logits, const uint8_t* allowed, size_t n);
double sum_exp_shifted_avx512(const float* logits, const uint8_t* allowed, size_t n, double m);

}  // namespace dllm::diffusion
