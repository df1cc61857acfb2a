// Internal to src/cpu: the load-time walk and the K-quant row header that the packed weight layouts share
// (qgemm_pack.cpp for Q4KBlock / Q6KBlock, qgemm_q6k8_pack.cpp for Q6K8Block, kernels/qgemm_bytes_pack.cpp
// for Q80Block / Q5KBlock / Q50Block).
#pragma once

#include <cstdint>

#include "cpu/kernels/qgemm.h"
#include "quant/k_scales.h"
#include "quant/quant.h"

namespace dllm::cpu::qgemm {

// The walk every layout shares: n_out rows of GGUF blocks (row-major, n_in / block_values per row)
// into ceil(n_out / kRows) groups x (n_in / block_values) packed blocks, group-major; pack_row(src
// block, r, dst block) fills row r of a packed block. Rows past n_out stay zero (d = 0: they
// contribute nothing). block_values: 256 for the K-quants, 32 for Q8_0 and Q5_0.
template <typename Packed, typename Block, typename PackRow>
AlignedArray<Packed> pack_groups(const Block* src, int64_t n_out, int64_t n_in, PackRow pack_row,
                                 int64_t block_values = quant::kQK_K) {
  const int64_t n_sb = n_in / block_values;
  const int64_t n_groups = (n_out + kRows - 1) / kRows;
  AlignedArray<Packed> dst = aligned_zeros<Packed>(size_t(n_groups * n_sb));
  Packed* out = dst.get();
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < n_groups; ++g) {
    for (int64_t sb = 0; sb < n_sb; ++sb) {
      for (int r = 0; r < kRows && g * kRows + r < n_out; ++r) {
        pack_row(src[(g * kRows + r) * n_sb + sb], r, out[g * n_sb + sb]);
      }
    }
  }
  return dst;
}

// Row r's header in a packed Q4_K / Q5_K block (Packed = Q4KBlock or Q5KBlock) from its GGUF block
// (block_q4_K or block_q5_K, the same d, dmin and 12 scale bytes): d, dmin, the 6-bit scales, and
// the mins as the (m[2p], m[2p+1]) pairs the kernels multiply with the activation sums of 32.
template <typename Packed, typename Block>
void pack_k_header_row(const Block& b, int r, Packed& o) {
  o.d[r] = b.d;
  o.dmin[r] = b.dmin;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    quant::q4k_scale_min(j, b.scales, sc, m);
    o.scales[j][r] = static_cast<uint8_t>(sc);
    o.mins[j / 2][r][j % 2] = static_cast<uint8_t>(m);
  }
}

}  // namespace dllm::cpu::qgemm
