// The RoPE angles of every position a forward pass may see, computed once per backend: the one table
// both the CPU pass (cpu::rope applies it) and the GPU pass (uploaded as is) rotate Q and K with.
#pragma once

#include <cstdint>
#include <vector>

namespace dllm::model {

/// cos/sin of the RoPE angles pos * base^(-2i/n_rot) / factor_i, i < n_rot/2, for pos < max_pos
/// (factor_i = freq_factors[i], or 1 without them: ggml_rope_ext's freq_factors, Gemma-4's rope_freqs),
/// computed in
/// double and rounded once (n_rot: the rotated dims of a head, head_dim unless RoPE is partial, as
/// ggml's n_dims). Row `pos` of cos()/sin() holds n_rot/2 values; rows are contiguous (max_pos x
/// n_rot/2, row-major).
class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(int64_t n_rot, int64_t max_pos, double freq_base, const std::vector<float>& freq_factors = {});
  const float* cos(int64_t pos) const { return cos_.data() + pos * half_; }
  const float* sin(int64_t pos) const { return sin_.data() + pos * half_; }
  /// The whole table, max_pos x n_rot/2 floats each.
  const std::vector<float>& cos_rows() const { return cos_; }
  const std::vector<float>& sin_rows() const { return sin_; }
  int64_t n_rot() const { return 2 * half_; }
  double freq_base() const { return base_; }
  int64_t max_pos() const { return max_pos_; }

 private:
  int64_t half_ = 0;
  int64_t max_pos_ = 0;
  double base_ = 0;
  std::vector<float> cos_, sin_;
};

}  // namespace dllm::model
