// RopeTable (rope_table.h).
#include "model/rope_table.h"

#include <cmath>

namespace dllm::model {

RopeTable::RopeTable(int64_t n_rot, int64_t max_pos, double freq_base, const std::vector<float>& freq_factors)
    : half_(n_rot / 2), max_pos_(max_pos), base_(freq_base) {
  cos_.resize(static_cast<size_t>(max_pos * half_));
  sin_.resize(cos_.size());
  for (int64_t p = 0; p < max_pos; ++p) {
    for (int64_t i = 0; i < half_; ++i) {
      double theta = static_cast<double>(p) *
                     std::pow(freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
      if (!freq_factors.empty()) theta /= static_cast<double>(freq_factors[static_cast<size_t>(i)]);
      cos_[static_cast<size_t>(p * half_ + i)] = static_cast<float>(std::cos(theta));
      sin_[static_cast<size_t>(p * half_ + i)] = static_cast<float>(std::sin(theta));
    }
  }
}

}  // namespace dllm::model
