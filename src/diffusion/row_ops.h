// Per-row statistics of the samplers: for one position's logits (n_vocab contiguous f32), the token
// a step would commit there and its confidence. Internal to src/diffusion (tests use it directly).
// All arithmetic is f64 (the references use f64 for LLaDA's Gumbel noise and softmax and the model
// dtype for Dream; f64 is the closest to the exact formula). One call is serial: the sampler threads
// over rows, so a row's result never depends on the thread count. Dream rows keep per-thread scratch
// (thread_local: a histogram and a bucket per id) between calls.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/isa.h"
#include "diffusion/dream_passes.h"
#include "diffusion/rng.h"

namespace dllm::diffusion {

/// The token chosen at a position and the score the step ranks positions by.
struct RowChoice {
  int32_t token = -1;
  double confidence = 0.0;
};

/// allowed[id] != 0: id may be sampled (defined by the tokenizer and not the mask id).
/// Disallowed ids take no part in argmax, noise, softmax or filtering: as if their logit were -inf
/// (the mechanism of generate.py's logits_eos_inf).

/// LLaDA generate.py, one row of l.94-103: x0 = argmax(add_gumbel_noise(l, T)) where
/// add_gumbel_noise = exp(l) / (-log u)^T in f64 with one u ~ U(0,1) per id drawn from `gumbel` in id
/// order (T == 0: plain argmax, `gumbel` unused and may be null); ties go to the lowest id.
/// confidence = softmax(l)[x0] of the NOISE-FREE logits (generate.py l.101: `p = F.softmax(logits)`,
/// not logits_with_noise). `isa` picks the path of the vocabulary-wide max and softmax sum
/// (row_sums.h: row_sums_path).
RowChoice llada_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    Rng* gumbel, Isa isa);

/// What Dream's sample_tokens returns as confidence.
enum class DreamConfidence {
  kProb,        ///< probs[x0] (origin, maskgit_plus)
  kMargin,      ///< top1 prob - top2 prob (topk_margin)
  kNegEntropy,  ///< sum p log(p + 1e-10) (entropy): <= 0, largest for the most certain row
};

/// Dream generation_utils.py sample_tokens, the distribution part: l / T (if T > 0), then top_p_logits
/// (if top_p < 1: sort descending, drop every id whose preceding cumulative probability exceeds top_p;
/// the first is always kept), then top_k_logits (if top_k > 0: drop ids whose logit is below the
/// k-th largest; ties kept), then softmax. Writes probs (size n_vocab; dropped ids get 0).
/// Ties in the top_p order go to the lower id. `order` is scratch.
///
/// How (one row, serial): the row maximum, then one fused pass (DreamPasses::exp_shifted) computes
/// e^(v - m), their sum and, when a filter is on, a histogram of v below m with each bucket's mass and
/// count. The top_p cut is the first bucket where the running mass passes top_p x sum; only that
/// bucket's ids are sorted (partial selection), the ones before it are kept and the ones after it
/// dropped without sorting. top_k finds its k-th largest the same way, by counts. The result equals
/// the sort-and-cumsum definition except where a cumulative mass lies within rounding (1e-16
/// relative) of top_p x sum, where the summation order decides.
void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order,
                 Isa isa);
/// The same with the given passes (tests force each implementation; the overload above uses
/// dream_passes(isa)).
void dream_probs(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                 double top_p, int64_t top_k, std::vector<double>& probs, std::vector<int32_t>& order,
                 const DreamPasses& passes);

/// Dream sample_tokens: the distribution of dream_probs, then x0 ~ Categorical(probs) when T > 0
/// (inverse CDF with one uniform from `categorical`) else argmax (lowest id on ties); confidence as `kind`.
RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order, Isa isa);
RowChoice dream_row(std::span<const float> logits, std::span<const uint8_t> allowed, double temperature,
                    double top_p, int64_t top_k, DreamConfidence kind, Rng* categorical,
                    std::vector<double>& probs, std::vector<int32_t>& order, const DreamPasses& passes);

}  // namespace dllm::diffusion
