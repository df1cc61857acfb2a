// The full-vocabulary passes of one Dream row (row_ops.cpp dream_probs / dream_row): exp of the
// shifted logits with their sum and a histogram for the top-p / top-k cut, a sum, a division, and the
// entropy sum. A row is n_vocab (152,064 for Dream) f32 logits and a step makes one per masked
// position, so these loops are the sampler's time. Two implementations with one contract: portable
// (std::exp / std::log, sums in id order: the arithmetic of the formula as written) and AVX2 (4 f64
// lanes, polynomial exp and log within 4 ulp of std::exp / std::log, sums in 4 lanes). Internal to
// src/diffusion; tests call each one directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/isa.h"

namespace dllm::diffusion {

/// The histogram of a row: bucket b holds the allowed ids whose v lies in (m - (b+1)/64, m - b/64]
/// (v = logit / T, m = the row's largest v), the last bucket everything further down (and NaN).
/// Larger v never lands in a later bucket, so buckets walked in order visit the ids in descending
/// order of v, bucket by bucket. 64 per unit over 64 units below m: an id 64 below the maximum has
/// e^-64 (1.6e-28) of its mass, so the last bucket only matters for a top_p within 1e-22 of 1.
inline constexpr int kDreamBuckets = 4096;
inline constexpr double kDreamBucketsPerUnit = 64.0;
inline constexpr uint16_t kNoBucket = 0xFFFF;  ///< a disallowed id (or one a filter dropped)

/// What DreamPasses::finish found.
struct RowEnd {
  double neg_entropy = 0.0;  ///< sum p log(p + 1e-10), 0 when not asked for
  int32_t draw = -1;         ///< the inverse-CDF draw, -1 when none (or not asked for)
};

struct DreamPasses {
  const char* name;  ///< "portable" or "avx2"
  /// false (portable): after the filters keep_through drops and sums the kept e in id order, then
  /// finish runs without buckets (the arithmetic of the formula as written). true (AVX2): the kept
  /// mass is summed bucket by bucket from exp_shifted's histogram, and finish drops by bucket, one
  /// pass fewer over the row.
  bool kept_mass_from_buckets;
  /// For i < n: e[i] = exp(v_i - m) for allowed ids (0 when v_i is -inf), 0 for the others, where
  /// v_i = logits[i] / T in f64 when T > 0, else logits[i], and m >= every allowed v_i (the row's
  /// maximum). Returns the sum of e. When bucket is not null, also bucket[i] (kNoBucket for
  /// disallowed ids) and, added in id order, bucket_mass[b] += e[i] and, when bucket_count is not
  /// null (top_k needs counts, top_p does not), bucket_count[b] += 1 (arrays of kDreamBuckets,
  /// zeroed by the caller).
  double (*exp_shifted)(const float* logits, const uint8_t* allowed, size_t n, double temperature, double m,
                        double* e, uint16_t* bucket, double* bucket_mass, uint32_t* bucket_count);
  /// The filters' cut: for i < n, ids with bucket[i] > cut get e[i] = 0 and bucket[i] = kNoBucket
  /// (disallowed ids already have both). Returns the sum of e afterwards (in id order in the
  /// portable one). cut = kDreamBuckets - 1 keeps every allowed id. Used by the portable rows.
  double (*keep_through)(double* e, uint16_t* bucket, size_t n, int cut);
  /// Writes the ids i < n with bucket[i] == b to ids, increasing; returns how many (ids must have
  /// room for them: n does).
  size_t (*find_bucket)(const uint16_t* bucket, size_t n, uint16_t b, int32_t* ids);
  /// The last pass of a row, after the filters: ids with bucket[i] > cut are dropped (bucket null:
  /// none is), and e[i] becomes p = e[i] / z for the others (z > 0: the sum of what is kept). Returns
  /// with `entropy` the sum over p != 0 of p log(p + 1e-10) (Dream's entropy confidence), and for
  /// u in (0, 1) the inverse-CDF draw: the first id whose running sum of p passes u (-1 when the
  /// total stays at or below u). The portable one divides and sums in id order; the AVX2 one
  /// multiplies by 1 / z (within 1 ulp) and sums 4 lanes, then blocks of 16 for the draw.
  RowEnd (*finish)(double* e, const uint16_t* bucket, size_t n, int cut, double z, bool entropy, double u);
  /// The largest logits[i] with allowed[i] != 0, NaN skipped; -inf when none (row_sums.h max_allowed).
  float (*max_allowed)(const float* logits, const uint8_t* allowed, size_t n);
};

/// std::exp / std::log, every sum in id order: the arithmetic the sampler had before the passes were
/// fused, bit for bit.
const DreamPasses& dream_passes_portable();
/// 4 f64 lanes (dream_passes_avx2.cpp). Call only where isa_supported(Isa::kAvx2).
const DreamPasses& dream_passes_avx2();
/// The passes of the kernel path `isa` (the sampler's SamplerParams::isa, i.e. --isa): portable for
/// Isa::kScalar, AVX2 for every other path (each of them implies AVX2 and FMA: base/isa.h). `isa`
/// must be supported by this CPU (check_params checks).
const DreamPasses& dream_passes(Isa isa);

/// The AVX2 elementary functions, for tests: y[i] = exp(x[i]) for x[i] in [-708, 0] (0 below -708
/// and for NaN), y[i] = log(x[i]) for positive normal x[i]. Call only where isa_supported(Isa::kAvx2).
void exp_avx2(const double* x, double* y, size_t n);
void log_avx2(const double* x, double* y, size_t n);

}  // namespace dllm::diffusion
