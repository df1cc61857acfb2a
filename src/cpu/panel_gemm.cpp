// panel_gemm: the columns are cut into blocks of whole strips, a multiple of the threads in number;
// each thread takes its blocks one at a time and runs each over all the ids, so the block's C rows
// stay in its L2 instead of going out to memory once per panel. Per panel of kPanelIds ids the
// thread decodes its columns of those B rows into strips (one strip, kPanelIds x nr floats, stays in
// L1 while every row block of A passes over it) and reads A's rows in place where the panel's ids are
// consecutive (every id used: no copy), else gathers them. Tiles at the bottom or right edge go through
// zero-padded copies, so the kernels see full mr x nr tiles only.
#include "cpu/panel_gemm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "cpu/kernels/panel_gemm_kernels.h"

namespace dllm::cpu {

int64_t panel_block_width(int64_t n, int threads, int64_t granule) {
  const int64_t per_thread = (n + threads * kBlockCols - 1) / (threads * kBlockCols);
  const int64_t want = threads * per_thread;
  return ((n + want - 1) / want + granule - 1) / granule * granule;
}

const float* panel_a_rows(const PanelGemm& g, const int32_t* ids, int64_t kc, int64_t ld,
                          std::vector<float>& gathered, int64_t& lda) {
  bool consecutive = true;
  for (int64_t p = 1; p < kc && consecutive; ++p) consecutive = ids[p] == ids[0] + p;
  if (consecutive) {
    lda = g.lda;
    return g.a + ids[0];
  }
  gathered.resize(static_cast<size_t>(g.m * ld));
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t p = 0; p < kc; ++p) gathered[i * ld + p] = g.a[i * g.lda + ids[p]];
  lda = ld;
  return gathered.data();
}

Isa panel_gemm_isa(Isa isa) {
  return (isa == Isa::kAvx512Vnni || isa == Isa::kAmx) && amx_bf16_supported() ? Isa::kAmx : isa;
}

void panel_gemm(Isa isa, const PanelGemm& g, int n_threads) {
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return;
  if (isa == Isa::kAmx && amx_bf16_supported()) return simd::panel_gemm_amx_bf16(g, n_threads);
  const PanelGemmKernels& kn = panel_gemm_kernels(isa);
  const int threads = std::max(1, n_threads);
  const int64_t mr = kn.mr, nr = kn.nr;
  const int64_t n_blocks = (g.m + mr - 1) / mr;
  const int64_t width = panel_block_width(g.n, threads, nr);  // whole strips
  const int64_t n_cblocks = (g.n + width - 1) / width;
  const int64_t strip_ld = kPanelIds * nr;  // floats per strip of a panel
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> row(static_cast<size_t>(width));
    std::vector<float> bp(static_cast<size_t>(width / nr * strip_ld));
    std::vector<float> gathered;                                     // A's rows where ids have gaps
    std::vector<float> a_edge(static_cast<size_t>(mr * kPanelIds));  // the last row block, zero-padded
    std::vector<float> c_edge(static_cast<size_t>(mr * nr));
#pragma omp for schedule(static)
    for (int64_t cb = 0; cb < n_cblocks; ++cb) {
      const int64_t j0 = cb * width, nc_block = std::min(width, g.n - j0);
      const int64_t n_strips = (nc_block + nr - 1) / nr;
      for (int64_t p0 = 0; p0 < g.k; p0 += kPanelIds) {
        const int64_t kc = std::min(kPanelIds, g.k - p0);
        const int32_t* ids = g.ids + p0;
        for (int64_t p = 0; p < kc; ++p) {
          g.b_row(ids[p], j0, j0 + nc_block, row.data());
          kn.pack_b_row(row.data(), nc_block, &bp[p * nr], strip_ld);
        }
        // A's rows for this panel: in place (ids consecutive) or gathered, then the last row block
        // padded with zero rows when m is not a multiple of mr.
        int64_t lda = 0;
        const float* a = panel_a_rows(g, ids, kc, kPanelIds, gathered, lda);
        const int64_t last_rows = g.m - (n_blocks - 1) * mr;
        if (last_rows < mr) {
          std::fill(a_edge.begin(), a_edge.end(), 0.0f);
          for (int64_t r = 0; r < last_rows; ++r)
            std::copy_n(a + ((n_blocks - 1) * mr + r) * lda, kc, &a_edge[r * kPanelIds]);
        }
        for (int64_t s = 0; s < n_strips; ++s) {
          const int64_t jc = j0 + s * nr, nc = std::min(nr, g.n - jc);
          const float* b = &bp[s * strip_ld];
          for (int64_t blk = 0; blk < n_blocks; ++blk) {
            const int64_t i0 = blk * mr, nrows = std::min(mr, g.m - i0);
            const float* ab = nrows == mr ? a + i0 * lda : a_edge.data();
            const int64_t ld = nrows == mr ? lda : kPanelIds;
            float* c = g.c + i0 * g.ldc + jc;
            if (nrows == mr && nc == nr) {
              kn.tile(ab, ld, b, kc, c, g.ldc);
              continue;
            }
            std::fill(c_edge.begin(), c_edge.end(), 0.0f);
            for (int64_t r = 0; r < nrows; ++r) std::copy_n(c + r * g.ldc, nc, &c_edge[r * nr]);
            kn.tile(ab, ld, b, kc, c_edge.data(), nr);
            for (int64_t r = 0; r < nrows; ++r) std::copy_n(&c_edge[r * nr], nc, c + r * g.ldc);
          }
        }
      }
    }
  }
}

}  // namespace dllm::cpu
