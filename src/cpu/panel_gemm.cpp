// panel_gemm: per panel of kPanelIds ids, the threads decode and pack B's rows (split by id), pack A's
// row blocks (split by block), then compute C's tiles (split by column strip; each strip's panel is
// reused from L1 by every row block). Tiles at the bottom or right edge go through a zero-padded
// copy, so the kernels see full mr x nr tiles only.
#include "cpu/panel_gemm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/kernels/panel_gemm_kernels.h"

namespace dllm::cpu {

void panel_gemm(Isa isa, const PanelGemm& g, int n_threads) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return;
  const PanelGemmKernels& kn = panel_gemm_kernels(isa);
  const int64_t mr = kn.mr, nr = kn.nr;
  const int64_t n_strips = (g.n + nr - 1) / nr, n_blocks = (g.m + mr - 1) / mr;
  const int64_t strip_ld = kPanelIds * nr;  // floats per strip of a panel
  std::vector<float> bp(static_cast<size_t>(n_strips * strip_ld));
  std::vector<float> ap(static_cast<size_t>(n_blocks * kPanelIds * mr));
#pragma omp parallel num_threads(std::max(1, n_threads))
  {
    std::vector<float> row(static_cast<size_t>(g.n));
    std::vector<float> edge(static_cast<size_t>(mr * nr));
    for (int64_t p0 = 0; p0 < g.k; p0 += kPanelIds) {
      const int64_t kc = std::min(kPanelIds, g.k - p0);
      // One work list: kc B rows, then n_blocks A blocks (both only write their own part).
#pragma omp for schedule(static)
      for (int64_t item = 0; item < kc + n_blocks; ++item) {
        if (item < kc) {
          g.b_row(g.ids[p0 + item], row.data());
          kn.pack_b_row(row.data(), g.n, &bp[item * nr], strip_ld);
          continue;
        }
        const int64_t b = item - kc;
        float* dst = &ap[b * kPanelIds * mr];
        for (int64_t r = 0; r < mr; ++r) {
          const int64_t i = b * mr + r;
          if (i >= g.m) {
            for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = 0.0f;
            continue;
          }
          const float* ar = g.a + i * g.lda;
          for (int64_t p = 0; p < kc; ++p) dst[p * mr + r] = ar[g.ids[p0 + p]];
        }
        kn.round_f16(dst, kc * mr);
      }
#pragma omp for schedule(static)
      for (int64_t s = 0; s < n_strips; ++s) {
        const int64_t j0 = s * nr, nc = std::min(nr, g.n - j0);
        for (int64_t b = 0; b < n_blocks; ++b) {
          const int64_t i0 = b * mr, nrows = std::min(mr, g.m - i0);
          float* c = g.c + i0 * g.ldc + j0;
          if (nrows == mr && nc == nr) {
            kn.tile(&ap[b * kPanelIds * mr], &bp[s * strip_ld], kc, c, g.ldc);
            continue;
          }
          std::fill(edge.begin(), edge.end(), 0.0f);
          for (int64_t r = 0; r < nrows; ++r) std::copy_n(c + r * g.ldc, nc, &edge[r * nr]);
          kn.tile(&ap[b * kPanelIds * mr], &bp[s * strip_ld], kc, edge.data(), nr);
          for (int64_t r = 0; r < nrows; ++r) std::copy_n(&edge[r * nr], nc, c + r * g.ldc);
        }
      }
    }
  }
}

}  // namespace dllm::cpu
