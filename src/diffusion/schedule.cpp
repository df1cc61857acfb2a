// Transfer schedules of the two reference samplers, and the names of their options.
#include <string>
#include <vector>

#include "base/error.h"
#include "diffusion/sampler.h"

namespace dllm::diffusion {

Remasking parse_remasking(const std::string& name) {
  if (name == "low_confidence") return Remasking::kLowConfidence;
  if (name == "random") return Remasking::kRandom;
  throw UsageError("unknown remasking '" + name + "' (valid: low_confidence, random)");
}

DreamAlg parse_dream_alg(const std::string& name) {
  if (name == "origin") return DreamAlg::kOrigin;
  if (name == "maskgit_plus") return DreamAlg::kMaskgitPlus;
  if (name == "topk_margin") return DreamAlg::kTopkMargin;
  if (name == "entropy") return DreamAlg::kEntropy;
  throw UsageError("unknown alg '" + name + "' (valid: origin, maskgit_plus, topk_margin, entropy)");
}

CacheMode parse_cache_mode(const std::string& name) {
  if (name == "none") return CacheMode::kNone;
  if (name == "prefix") return CacheMode::kPrefix;
  if (name == "dual") return CacheMode::kDual;
  if (name == "exact") return CacheMode::kExact;
  throw UsageError("unknown cache '" + name + "' (valid: none, prefix, dual, exact)");
}

const char* cache_mode_name(CacheMode c) {
  switch (c) {
    case CacheMode::kNone:
      return "none";
    case CacheMode::kPrefix:
      return "prefix";
    case CacheMode::kDual:
      return "dual";
    case CacheMode::kExact:
      return "exact";
  }
  return "?";
}

std::vector<int64_t> block_transfer_counts(int64_t block_length, int64_t steps) {
  std::vector<int64_t> counts(static_cast<size_t>(steps), block_length / steps);
  for (int64_t i = 0; i < block_length % steps; ++i) ++counts[static_cast<size_t>(i)];
  return counts;
}

const char* remasking_name(Remasking r) {
  switch (r) {
    case Remasking::kLowConfidence:
      return "low_confidence";
    case Remasking::kRandom:
      return "random";
  }
  return "?";
}

const char* dream_alg_name(DreamAlg a) {
  switch (a) {
    case DreamAlg::kOrigin:
      return "origin";
    case DreamAlg::kMaskgitPlus:
      return "maskgit_plus";
    case DreamAlg::kTopkMargin:
      return "topk_margin";
    case DreamAlg::kEntropy:
      return "entropy";
  }
  return "?";
}

std::vector<int64_t> llada_transfer_counts(int64_t masks, int64_t steps) {
  // generate.py get_num_transfer_tokens: base = mask_num // steps, remainder = mask_num % steps,
  // num_transfer_tokens[:, :remainder] += 1.
  std::vector<int64_t> counts(static_cast<size_t>(steps), masks / steps);
  for (int64_t i = 0; i < masks % steps; ++i) counts[static_cast<size_t>(i)] += 1;
  return counts;
}

std::vector<float> dream_timesteps(int64_t steps, double eps) {
  // torch.linspace(1, eps, steps + 1) for a float32 tensor, as ATen's scalar kernel writes it
  // (RangeFactoriesKernel.cpp linspace_kernel; the CUDA kernel uses the same two-sided formula):
  // the first half counts up from start, the second half down from end, so both ends are exact.
  const int64_t n = steps + 1;
  const float start = 1.0f;
  const float end = static_cast<float>(eps);
  const float step = (end - start) / static_cast<float>(n - 1);
  const int64_t halfway = n / 2;
  std::vector<float> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (i < halfway) {
      const float d = step * static_cast<float>(i);
      t[static_cast<size_t>(i)] = start + d;
    } else {
      const float d = step * static_cast<float>(n - i - 1);
      t[static_cast<size_t>(i)] = end - d;
    }
  }
  return t;
}

float dream_transfer_probability(int64_t step, const std::vector<float>& timesteps) {
  const int64_t steps = static_cast<int64_t>(timesteps.size()) - 1;
  if (step >= steps - 1) return 1.0f;
  const float t = timesteps[static_cast<size_t>(step)];
  const float s = timesteps[static_cast<size_t>(step) + 1];
  const float ratio = s / t;
  return 1.0f - ratio;
}

int64_t dream_transfer_count(int64_t n_masks, int64_t step, const std::vector<float>& timesteps) {
  // _sample: number_transfer_tokens = int(num_mask_token * (1 - s / t)) if i < steps - 1 else
  // int(num_mask_token); num_mask_token = mask_index.sum() / batch is a float32 tensor.
  const int64_t steps = static_cast<int64_t>(timesteps.size()) - 1;
  if (step >= steps - 1) return n_masks;
  const float p = dream_transfer_probability(step, timesteps);
  const float prod = static_cast<float>(n_masks) * p;
  return static_cast<int64_t>(prod);
}

}  // namespace dllm::diffusion
