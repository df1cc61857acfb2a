// AVX-512 VNNI kernels over the packed 16-row groups of Q4_K and Q6_K (compiled with
// -mavx512f/bw/vl/dq/vnni); the Q8_0 / Q5_0 ones are in qgemm_bytes_avx512.cpp, with the same driver.
//
// Tile: 32 rows (two groups, two zmm of int32 lanes) x 4 tokens; a lone last group uses a 16-row tile,
// and the token remainder goes in 3-token tiles where the count allows (cpu/kernels/qgemm_zmm.h
// for_group_pairs, cpu/kernels/qgemm_tiling.h for_token_tiles).
// For each 64-byte weight line the kernel unpacks two u8 vectors (low and high nibbles) per group and
// feeds each to one vpdpbusd per token, whose s8 operand is 4 activation bytes broadcast to all lanes;
// each broadcast serves both groups. Per 32-weight sub-block (Q4_K) or 16-weight sub-block (Q6_K) the
// int32 sums are multiplied by the per-row integer scales and kept in int32 for the whole super-block
// (bounds: Q4_K |S| <= 8 * 63 * 32 * 15 * 128 < 2^31; Q6_K <= 16 * 128 * 16 * 63 * 127 plus the offset
// 32 * 16 * 128 * 16 * 127 < 2^31). Q4_K does that multiply-add with vpdpwssd (one uop, where add +
// vpmulld + add are four: the low and high nibbles' sums each fit an int16); Q6_K's sums of 16
// products of (x + 128)(q - 32) do not, so it uses vpmulld. The zero points come from the activation
// sums through vpdpwssd once per super-block, and f32 only at the end of a super-block:
// acc += d_x * (d * S - dmin * M).
//
// Why this shape: vpdpbusd issues 2 per cycle and shares those two pipes with every multiply
// (vpmulld, vpdpwssd, FMA). On the Zen 5 core this was first tuned on (docs/kernels.md) the nibble
// unpacking (and, shift), broadcasts and int32 -> f32 conversions run on other pipes for free; on
// Intel cores the zmm and / shift also take the two vpdpbusd ports. So a Q4_K call with more than one
// token tile unpacks each weight line once: its first tile stores the unpacked bytes of the group pair
// (8 KB per super-block, L2-resident) and the other tiles load them. 32 rows halve the broadcast loads.
// vpdpbusd's latency needs more than the 8 chains of a 2 x 4 tile to keep both pipes busy (the peak
// loop in qgemm_bench reaches 0.91 of its best with 8 accumulators, 1.0 with 12), so Q4_K gives low
// and high nibbles separate chains (16), as Q6K8 does with its two sub-blocks.
//
// Each group pair is read from memory once and then reused from L2 by every token tile; the driver
// prefetches the next pair's weights, a slice per tile issued a few lines per super-block, so the
// first tile does not wait on DRAM (past the work item's own rows too: the forward pass hands items
// out guided, so the next pair is usually this thread's next item).
#include <immintrin.h>
// GCC 12 reports its own _mm512_undefined_*() placeholders in avx512fintrin.h as "may be used
// uninitialized" once these inline into the tiles (a known false positive); nothing here is.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <vector>

#include "cpu/kernels/qgemm_zmm.h"

namespace dllm::cpu::qgemm {
namespace {

// ---------------------------------------------------------------------------------------------------
// Q4_K. NG groups (1 or 2, consecutive: group k at w + k * n_sb) x NT tokens starting at x (token rows
// n_sb blocks apart), bs32 the matching activation sums of 32 (qgemm.h make_bs32).

// Where a tile takes its weight bytes: unpacked from the packed nibbles (kPacked), the same and also
// stored to the call's unpack buffer (kPackedStore: the first token tile of a group pair), or loaded
// from that buffer (kUnpacked: the later token tiles), which spares them the masking and shifting.
enum class Src { kPacked, kPackedStore, kUnpacked };

// The unpacked bytes of one group and super-block: [j][p][lo, hi] x 64.
constexpr int64_t kUnpackedSb = 8 * 4 * 2 * 64;

template <int NG, int NT, Src S>
void q4_K_tile(const Q4KBlock* w, int64_t n_sb, const quant::block_q8_K* x, const int16_t* bs32, float* y,
               int64_t ldy, const __mmask16* mask, Prefetcher::Span pf, uint8_t* unpacked) {
  const int64_t pf_per = pf.per_step(n_sb);
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  __m512 acc[NT][NG];
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) acc[t][g] = _mm512_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q4KBlock* b[NG];
    for (int g = 0; g < NG; ++g) b[g] = w + g * n_sb + sb;
    __m512i sacc[NT][NG];
    for (int t = 0; t < NT; ++t) {
      for (int g = 0; g < NG; ++g) sacc[t][g] = _mm512_setzero_si512();
    }
    // S = sum_j sc[j] * sum_{i in j} q_i x_i. Low and high nibbles feed separate chains (summed before
    // the scale): 2 x NT x NG independent vpdpbusd chains, enough to cover its latency at 2 per cycle.
    for (int j = 0; j < 8; ++j) {
      __m512i il[NT][NG], ih[NT][NG];
      for (int t = 0; t < NT; ++t) {
        for (int g = 0; g < NG; ++g) il[t][g] = ih[t][g] = _mm512_setzero_si512();
      }
      for (int p = 0; p < 4; ++p) {
        // Line qs[j][p]: low nibbles pair with activations 32j+4p.., high nibbles with 32j+16+4p...
        __m512i c[NG], lo[NG], hi[NG];
        uint8_t* u[NG] = {};  // the line's unpacked bytes (null without a buffer: no offset from null)
        for (int g = 0; g < NG; ++g) {
          if constexpr (S != Src::kPacked) u[g] = unpacked + ((sb * NG + g) * 32 + 4 * j + p) * 128;
          if constexpr (S == Src::kUnpacked) {
            lo[g] = _mm512_load_si512(u[g]);
          } else {
            c[g] = _mm512_load_si512(b[g]->qs[j][p]);
            lo[g] = _mm512_and_si512(c[g], m4);
            if constexpr (S == Src::kPackedStore) _mm512_store_si512(u[g], lo[g]);
          }
        }
        for (int t = 0; t < NT; ++t) {
          const __m512i bx = bcast32_zmm(x[t * n_sb + sb].qs + 32 * j + 4 * p);
          for (int g = 0; g < NG; ++g) il[t][g] = _mm512_dpbusd_epi32(il[t][g], lo[g], bx);
        }
        for (int g = 0; g < NG; ++g) {
          if constexpr (S == Src::kUnpacked) {
            hi[g] = _mm512_load_si512(u[g] + 64);
          } else {
            hi[g] = _mm512_and_si512(_mm512_srli_epi16(c[g], 4), m4);
            if constexpr (S == Src::kPackedStore) _mm512_store_si512(u[g] + 64, hi[g]);
          }
        }
        for (int t = 0; t < NT; ++t) {
          const __m512i bx = bcast32_zmm(x[t * n_sb + sb].qs + 32 * j + 16 + 4 * p);
          for (int g = 0; g < NG; ++g) ih[t][g] = _mm512_dpbusd_epi32(ih[t][g], hi[g], bx);
        }
      }
      // sacc += sc * il + sc * ih through vpdpwssd: |il|, |ih| <= 16 * 15 * 128 < 2^15, so each int32 lane
      // equals its low int16 half, and sc (zero-extended to int32) has a zero high half. One uop each,
      // where add + vpmulld + add cost four on the vector pipes vpdpbusd needs.
      for (int g = 0; g < NG; ++g) {
        const __m512i sc =
            _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b[g]->scales[j])));
        for (int t = 0; t < NT; ++t) {
          sacc[t][g] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(sacc[t][g], il[t][g], sc), ih[t][g], sc);
        }
      }
    }
    // Min term M = sum_j m[j] * bs32[j]: two sub-blocks per vpdpwssd (int16 pairs). After the S loop,
    // so its accumulators do not hold registers through it.
    __m512i macc[NT][NG];
    for (int t = 0; t < NT; ++t) {
      for (int g = 0; g < NG; ++g) macc[t][g] = _mm512_setzero_si512();
    }
    for (int p = 0; p < 4; ++p) {
      __m512i mp[NG];
      for (int g = 0; g < NG; ++g) {
        mp[g] = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b[g]->mins[p])));
      }
      for (int t = 0; t < NT; ++t) {
        const __m512i bs = bcast32_zmm(bs32 + (t * n_sb + sb) * 8 + 2 * p);
        for (int g = 0; g < NG; ++g) macc[t][g] = _mm512_dpwssd_epi32(macc[t][g], mp[g], bs);
      }
    }
    for (int g = 0; g < NG; ++g) {
      const __m512 d = load_f16x16(b[g]->d);
      const __m512 dmin = load_f16x16(b[g]->dmin);
      for (int t = 0; t < NT; ++t) {
        const __m512 f = _mm512_fmsub_ps(d, _mm512_cvtepi32_ps(sacc[t][g]),
                                         _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(macc[t][g])));
        acc[t][g] = _mm512_fmadd_ps(f, _mm512_set1_ps(x[t * n_sb + sb].d), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) _mm512_mask_storeu_ps(y + t * ldy + g * kRows, mask[g], acc[t][g]);
  }
}

// ---------------------------------------------------------------------------------------------------
// The Q6_K tiles' sub-block scale step: sacc[t][g] += sc[2s] * ia[t][g] + sc[2s+1] * ib[t][g] for the 16
// rows of group g, from the (sc[2s], sc[2s+1]) int8 pairs at b[g]->scales[s] (Q6KBlock and Q6K8Block
// store them alike). vpmulld: the sums of 16 products do not fit the int16 halves vpdpwssd takes.
template <int NG, int NT, class Block>
inline void add_scaled_sub_blocks(__m512i (&sacc)[NT][NG], const __m512i (&ia)[NT][NG],
                                  const __m512i (&ib)[NT][NG], const Block* const (&b)[NG], int s) {
  for (int g = 0; g < NG; ++g) {
    const __m512i pairs =
        _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b[g]->scales[s])));
    const __m512i sc_lo = _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16);  // sc[2s]
    const __m512i sc_hi = _mm512_srai_epi32(pairs, 16);                         // sc[2s+1]
    for (int t = 0; t < NT; ++t) {
      sacc[t][g] = _mm512_add_epi32(sacc[t][g], _mm512_add_epi32(_mm512_mullo_epi32(ia[t][g], sc_lo),
                                                                 _mm512_mullo_epi32(ib[t][g], sc_hi)));
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Q6_K over the byte layout (Q6K8Block): q = the 6-bit value - 32 in a byte (the -32 stored, not added
// through the activation bsums), so each 64-byte line is a vpdpbusd operand as loaded: one load per
// line instead of the ~8 unpacking instructions the nibble + 2-bit planes of Q6KBlock cost.

template <int NG, int NT>
void q6_K8_tile(const Q6K8Block* w, int64_t n_sb, const quant::block_q8_K* x, const uint8_t* xu, float* y,
                int64_t ldy, const __mmask16* mask, Prefetcher::Span pf) {
  const int64_t pf_per = pf.per_step(n_sb);
  // xu: the activations + 128 as unsigned bytes (GemmArgs::xu8) of these NT tokens. The products
  // (x + 128)(q - 32) need no zero-point term per token: the +128 part is the per-row constant corr.
  __m512 acc[NT][NG];
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) acc[t][g] = _mm512_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q6K8Block* b[NG];
    for (int g = 0; g < NG; ++g) b[g] = w + g * n_sb + sb;
    __m512i sacc[NT][NG];
    for (int t = 0; t < NT; ++t) {
      for (int g = 0; g < NG; ++g) sacc[t][g] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 8; ++s) {
      __m512i ia[NT][NG], ib[NT][NG];  // sub-blocks 2s and 2s + 1
      for (int t = 0; t < NT; ++t) {
        for (int g = 0; g < NG; ++g) ia[t][g] = ib[t][g] = _mm512_setzero_si512();
      }
      for (int p = 0; p < 4; ++p) {
        __m512i lo[NG], hi[NG];
        for (int g = 0; g < NG; ++g) {
          lo[g] = _mm512_load_si512(b[g]->q[s][p][0]);
          hi[g] = _mm512_load_si512(b[g]->q[s][p][1]);
        }
        for (int t = 0; t < NT; ++t) {
          const uint8_t* xq = xu + (t * n_sb + sb) * quant::kQK_K + 32 * s + 4 * p;
          const __m512i bl = bcast32_zmm(xq), bh = bcast32_zmm(xq + 16);
          for (int g = 0; g < NG; ++g) {
            ia[t][g] = _mm512_dpbusd_epi32(ia[t][g], bl, lo[g]);
            ib[t][g] = _mm512_dpbusd_epi32(ib[t][g], bh, hi[g]);
          }
        }
      }
      add_scaled_sub_blocks<NG, NT>(sacc, ia, ib, b, s);
    }
    for (int g = 0; g < NG; ++g) {
      const __m512 d = _mm512_load_ps(b[g]->d);
      const __m512i corr = _mm512_load_si512(b[g]->corr);
      for (int t = 0; t < NT; ++t) {
        acc[t][g] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(sacc[t][g], corr))),
                                    _mm512_set1_ps(x[t * n_sb + sb].d), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) _mm512_mask_storeu_ps(y + t * ldy + g * kRows, mask[g], acc[t][g]);
  }
}

// ---------------------------------------------------------------------------------------------------
// Q6_K over the compact layout (Q6KBlock: a low-nibble plane as Q4KBlock::qs and a 2-bit plane), for
// expert matrices a step reads for a few rows (WeightLayout::kCompact). Each line is rebuilt into the
// unsigned 6-bit q (0..63) of two vpdpbusd operands, sub-blocks 2s (low nibbles) and 2s + 1 (high),
// as the ymm kernel of qgemm_ymm.h (q6_K_tile) does; here 32 rows x 4 tokens per tile, and with more
// than one token tile the rebuilt lines are stored by the first tile and loaded by the others, as for
// Q4_K. S = sum_j sc[j] (sum q x - 32 bsums[j]): |sum q x| per sub-block <= 16 * 63 * 128 needs
// vpmulld; the offset term M = sum_j sc[j] bsums[j] goes through vpdpwssd once per super-block
// (|32 M| <= 32 * 16 * 128 * 2048 < 2^31). S is the ymm kernel's exact int32 and the f32 step its
// operations, so the two give the same bits.

template <int NG, int NT, Src S>
void q6_K_tile(const Q6KBlock* w, int64_t n_sb, const quant::block_q8_K* x, float* y, int64_t ldy,
               const __mmask16* mask, Prefetcher::Span pf, uint8_t* unpacked) {
  const int64_t pf_per = pf.per_step(n_sb);
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  __m512 acc[NT][NG];
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) acc[t][g] = _mm512_setzero_ps();
  }
  for (int64_t sb = 0; sb < n_sb; ++sb) {
    pf.step(sb, pf_per);
    const Q6KBlock* b[NG];
    for (int g = 0; g < NG; ++g) b[g] = w + g * n_sb + sb;
    __m512i sacc[NT][NG];
    for (int t = 0; t < NT; ++t) {
      for (int g = 0; g < NG; ++g) sacc[t][g] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 8; ++s) {
      __m512i ia[NT][NG], ib[NT][NG];  // sub-blocks 2s and 2s + 1
      for (int t = 0; t < NT; ++t) {
        for (int g = 0; g < NG; ++g) ia[t][g] = ib[t][g] = _mm512_setzero_si512();
      }
      for (int p = 0; p < 4; ++p) {
        __m512i lo[NG], hi[NG];
        for (int g = 0; g < NG; ++g) {
          uint8_t* const u = S == Src::kPacked ? nullptr : unpacked + ((sb * NG + g) * 32 + 4 * s + p) * 128;
          if constexpr (S == Src::kUnpacked) {
            lo[g] = _mm512_load_si512(u);
            hi[g] = _mm512_load_si512(u + 64);
          } else {
            // ql line p: low nibbles q[32s + 4p + b] & 15, high nibbles q[32s + 16 + 4p + b] & 15; their
            // top 2 bits sit in qh[s][p / 2] (Q6KBlock): bits 0-1 / 2-3 for even p, 4-5 / 6-7 for odd.
            const __m512i c = _mm512_load_si512(b[g]->ql[s][p]);
            const __m512i hb = _mm512_load_si512(b[g]->qh[s][p / 2]);
            const __m512i hl = _mm512_and_si512(p % 2 == 0 ? _mm512_slli_epi16(hb, 4) : hb, m30);
            const __m512i hh =
                _mm512_and_si512(p % 2 == 0 ? _mm512_slli_epi16(hb, 2) : _mm512_srli_epi16(hb, 2), m30);
            lo[g] = _mm512_ternarylogic_epi32(c, m4, hl, 0xEA);  // (c & m4) | hl
            hi[g] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(c, 4), m4, hh, 0xEA);
            if constexpr (S == Src::kPackedStore) {
              _mm512_store_si512(u, lo[g]);
              _mm512_store_si512(u + 64, hi[g]);
            }
          }
        }
        for (int t = 0; t < NT; ++t) {
          const int8_t* xq = x[t * n_sb + sb].qs + 32 * s + 4 * p;
          const __m512i bl = bcast32_zmm(xq), bh = bcast32_zmm(xq + 16);
          for (int g = 0; g < NG; ++g) {
            ia[t][g] = _mm512_dpbusd_epi32(ia[t][g], lo[g], bl);
            ib[t][g] = _mm512_dpbusd_epi32(ib[t][g], hi[g], bh);
          }
        }
      }
      add_scaled_sub_blocks<NG, NT>(sacc, ia, ib, b, s);
    }
    // M = sum_j sc[j] * bsums[j]: the pair (sc[2s], sc[2s+1]) against (bsums[2s], bsums[2s+1]).
    __m512i macc[NT][NG];
    for (int t = 0; t < NT; ++t) {
      for (int g = 0; g < NG; ++g) macc[t][g] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 8; ++s) {
      __m512i pairs[NG];
      for (int g = 0; g < NG; ++g) {
        pairs[g] = _mm512_cvtepi8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b[g]->scales[s])));
      }
      for (int t = 0; t < NT; ++t) {
        const __m512i bs = bcast32_zmm(x[t * n_sb + sb].bsums + 2 * s);
        for (int g = 0; g < NG; ++g) macc[t][g] = _mm512_dpwssd_epi32(macc[t][g], pairs[g], bs);
      }
    }
    for (int g = 0; g < NG; ++g) {
      const __m512 d = _mm512_load_ps(b[g]->d);
      for (int t = 0; t < NT; ++t) {
        const __m512i st = _mm512_sub_epi32(sacc[t][g], _mm512_slli_epi32(macc[t][g], 5));
        acc[t][g] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(st)),
                                    _mm512_set1_ps(x[t * n_sb + sb].d), acc[t][g]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int g = 0; g < NG; ++g) _mm512_mask_storeu_ps(y + t * ldy + g * kRows, mask[g], acc[t][g]);
  }
}

// The call's buffer for the unpacked lines of one group pair (2 x n_sb x kUnpackedSb bytes, 64-byte
// aligned), or nullptr when the call has a single token tile and so unpacks in registers only.
uint8_t* unpack_buffer(const GemmArgs& a) {
  if (split_tokens(a.n_tokens).tiles() <= 1) return nullptr;
  thread_local std::vector<uint8_t> buf;
  buf.resize(size_t(2 * a.n_sb * kUnpackedSb + 63));
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t(63));
}

// Runs tile.template operator()<NG, NT, S>(g, t, mask, span) over the group pairs and token tiles of
// `a`: with more than one token tile, the first of each group pair stores what it unpacks into
// `unpacked` (Src::kPackedStore) and the others load it (Src::kUnpacked).
template <class Block, class Tile>
void for_unpacked_tiles(const GemmArgs& a, uint8_t* unpacked, Tile&& tile) {
  for_group_pairs<Block>(a, [&]<int NG>(int64_t g, const __mmask16* mask, Prefetcher& pf) {
    bool first = true;
    for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
      if (unpacked == nullptr) {
        tile.template operator()<NG, NT, Src::kPacked>(g, t, mask, span);
      } else if (first) {
        tile.template operator()<NG, NT, Src::kPackedStore>(g, t, mask, span);
      } else {
        tile.template operator()<NG, NT, Src::kUnpacked>(g, t, mask, span);
      }
      first = false;
    });
  });
}

}  // namespace

// Pairs of groups, then a lone group (for_group_pairs); tokens in tiles of 4, then of 3, then one
// of the 1-2 left (for_token_tiles); Q4_K and compact Q6_K reuse their unpacked lines across the token
// tiles of a group pair (for_unpacked_tiles).
void gemm_q4_K_avx512(const GemmArgs& a) {
  const auto* w = static_cast<const Q4KBlock*>(a.w);
  uint8_t* const unpacked = unpack_buffer(a);
  for_unpacked_tiles<Q4KBlock>(
      a, unpacked,
      [&]<int NG, int NT, Src S>(int64_t g, int64_t t, const __mmask16* mask, Prefetcher::Span pf) {
        q4_K_tile<NG, NT, S>(w + g * a.n_sb, a.n_sb, a.x + t * a.n_sb, a.bs32 + t * a.n_sb * 8,
                             a.y + g * kRows + t * a.ldy, a.ldy, mask, pf, unpacked);
      });
}
void gemm_q6_K_avx512(const GemmArgs& a) {
  const auto* w = static_cast<const Q6KBlock*>(a.w);
  uint8_t* const unpacked = unpack_buffer(a);
  for_unpacked_tiles<Q6KBlock>(
      a, unpacked,
      [&]<int NG, int NT, Src S>(int64_t g, int64_t t, const __mmask16* mask, Prefetcher::Span pf) {
        q6_K_tile<NG, NT, S>(w + g * a.n_sb, a.n_sb, a.x + t * a.n_sb, a.y + g * kRows + t * a.ldy, a.ldy,
                             mask, pf, unpacked);
      });
}
void gemm_q6_K8_avx512(const GemmArgs& a) {
  const auto* w = static_cast<const Q6K8Block*>(a.w);
  for_group_pairs<Q6K8Block>(a, [&]<int NG>(int64_t g, const __mmask16* mask, Prefetcher& pf) {
    for_token_tiles(a.n_tokens, pf, [&]<int NT>(int64_t t, Prefetcher::Span span) {
      q6_K8_tile<NG, NT>(w + g * a.n_sb, a.n_sb, a.x + t * a.n_sb, a.xu8 + t * a.n_sb * quant::kQK_K,
                         a.y + g * kRows + t * a.ldy, a.ldy, mask, span);
    });
  });
}

}  // namespace dllm::cpu::qgemm
