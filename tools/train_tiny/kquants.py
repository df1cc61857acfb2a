"""Q4_K and Q6_K quantization in numpy (the gguf PyPI package only dequantizes K-quants).

Written from ggml's reference algorithms as documented in ggml-quants.c (quantize_row_q4_K_ref with
make_qkx2_quants, quantize_row_q6_K_ref with make_qx_quants) and the block layouts in ggml-common.h,
vectorized over super-blocks of 256 values:

  block_q4_K (144 B): d f16, dmin f16, scales[12] (8 x 6-bit scale + 8 x 6-bit min, packed),
                      qs[128] (4-bit q; byte 32c+l holds q[64c+l] low nibble, q[64c+32+l] high nibble)
                      x = d * sc_j * q - dmin * m_j   for sub-block j of 32 values
  block_q6_K (210 B): ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] int8, d f16
                      x = d * sc_j * (q - 32)          for sub-block j of 16 values

Rounding is ggml's nearest_int (round half to even, = np.rint). Each quantize_* returns the packed
bytes (rows, bytes_per_row) and this module's own dequantization of them, which export.py compares with
gguf.quants.dequantize (an independent decoder) and which our C++ decoders (src/quant) must reproduce.
"""

import numpy as np

QK_K = 256
F16 = np.float16


def _f16(x):
    return x.astype(F16).astype(np.float32)


def _make_qkx2_quants(x, w, nmax=15, rmin=-1.0, rdelta=0.1, nstep=20):
    """make_qkx2_quants (use_mad = false) on (N, n) sub-blocks: returns scale (N,), min (N,) as the
    positive offset (x ~ scale * L - min), and L (N, n) in 0..nmax."""
    x = x.astype(np.float32)
    mn = np.minimum(x.min(axis=1), 0.0)
    mx = x.max(axis=1)
    sum_w = w.sum(axis=1)
    sum_x = (w * x).sum(axis=1)
    rng = mx - mn
    flat = rng == 0
    rng_safe = np.where(flat, 1.0, rng)
    iscale = nmax / rng_safe
    scale = 1.0 / iscale
    L = np.clip(np.rint(iscale[:, None] * (x - mn[:, None])), 0, nmax)
    best = (w * (scale[:, None] * L + mn[:, None] - x) ** 2).sum(axis=1)
    for i in range(nstep + 1):
        isc = (rmin + rdelta * i + nmax) / rng_safe
        La = np.clip(np.rint(isc[:, None] * (x - mn[:, None])), 0, nmax)
        sum_l = (w * La).sum(axis=1)
        sum_l2 = (w * La * La).sum(axis=1)
        sum_xl = (w * La * x).sum(axis=1)
        D = sum_w * sum_l2 - sum_l * sum_l
        ok = D > 0
        Ds = np.where(ok, D, 1.0)
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / Ds
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / Ds
        pos = this_min > 0
        this_min = np.where(pos, 0.0, this_min)
        this_scale = np.where(pos, sum_xl / np.where(sum_l2 > 0, sum_l2, 1.0), this_scale)
        err = (w * (this_scale[:, None] * La + this_min[:, None] - x) ** 2).sum(axis=1)
        better = ok & (err < best)
        L = np.where(better[:, None], La, L)
        best = np.where(better, err, best)
        scale = np.where(better, this_scale, scale)
        mn = np.where(better, this_min, mn)
    scale = np.where(flat, 0.0, scale)
    return scale.astype(np.float32), (-mn).astype(np.float32), L


def quantize_q4_K(w):
    """w: (rows, cols) float32 with cols % 256 == 0 -> (bytes (rows, cols/256*144) uint8, dequant)."""
    rows, cols = w.shape
    x = w.reshape(-1, 8, 32).astype(np.float32)  # (nb, 8 sub-blocks, 32)
    nb = x.shape[0]
    av_x = np.sqrt((x.reshape(nb, -1) ** 2).sum(axis=1) / QK_K)
    weights = av_x[:, None, None] + np.abs(x)
    sc, mins, _ = _make_qkx2_quants(x.reshape(-1, 32), weights.reshape(-1, 32))
    sc, mins = sc.reshape(nb, 8), mins.reshape(nb, 8)
    max_scale, max_min = sc.max(axis=1), mins.max(axis=1)
    inv_scale = np.where(max_scale > 0, 63.0 / np.where(max_scale > 0, max_scale, 1), 0.0)
    inv_min = np.where(max_min > 0, 63.0 / np.where(max_min > 0, max_min, 1), 0.0)
    ls = np.minimum(np.rint(inv_scale[:, None] * sc), 63).astype(np.uint8)
    lm = np.minimum(np.rint(inv_min[:, None] * mins), 63).astype(np.uint8)
    d = (max_scale / 63.0).astype(F16)
    dmin = (max_min / 63.0).astype(F16)
    # Final q from the rounded (f16 / 6-bit) scales, as ggml does.
    dj = d.astype(np.float32)[:, None] * ls
    mj = dmin.astype(np.float32)[:, None] * lm
    dj_safe = np.where(dj > 0, dj, 1.0)
    q = np.clip(np.rint((x + mj[:, :, None]) / dj_safe[:, :, None]), 0, 15)
    q = np.where((dj > 0)[:, :, None], q, 0).astype(np.uint8)
    deq = dj[:, :, None] * q - mj[:, :, None]
    # Pack scales: j < 4 plain 6 bits; j >= 4 low nibbles in bytes 8..11, top 2 bits in bytes j-4 / j.
    s = np.zeros((nb, 12), np.uint8)
    s[:, 0:4] = ls[:, 0:4]
    s[:, 4:8] = lm[:, 0:4]
    s[:, 8:12] = (ls[:, 4:8] & 0xF) | ((lm[:, 4:8] & 0xF) << 4)
    s[:, 0:4] |= (ls[:, 4:8] >> 4) << 6
    s[:, 4:8] |= (lm[:, 4:8] >> 4) << 6
    qf = q.reshape(nb, 4, 2, 32)  # chunk c of 64 = sub-blocks 2c (low nibble), 2c+1 (high nibble)
    qs = (qf[:, :, 0, :] | (qf[:, :, 1, :] << 4)).reshape(nb, 128)
    blk = np.concatenate([d.reshape(nb, 1).view(np.uint8), dmin.reshape(nb, 1).view(np.uint8), s, qs], axis=1)
    assert blk.shape[1] == 144
    return blk.reshape(rows, -1), deq.reshape(rows, cols).astype(np.float32)


def _make_qx_quants_rmse1(x, nmax=32):
    """make_qx_quants(n, nmax, x, L, rmse_type = 1, qw = NULL) on (N, n) sub-blocks -> scale (N,)."""
    ax = np.abs(x)
    idx = ax.argmax(axis=1)  # first index of the largest |x|, as the C loop's strict '>'
    amax = ax[np.arange(len(x)), idx]
    mx = x[np.arange(len(x)), idx]
    zero = amax < 1e-30  # GROUP_MAX_EPS
    mx_safe = np.where(zero, 1.0, mx)
    w = x * x

    def fit(iscale):
        l = np.clip(np.rint(iscale[:, None] * x), -nmax, nmax - 1)
        return (w * x * l).sum(axis=1), (w * l * l).sum(axis=1)

    iscale0 = -nmax / mx_safe
    sumlx, suml2 = fit(iscale0)
    scale = np.where(suml2 > 0, sumlx / np.where(suml2 > 0, suml2, 1), 0.0)
    best = scale * sumlx
    for i in range(-9, 10):
        if i == 0:
            continue
        isc = -(nmax + 0.1 * i) / mx_safe
        slx, sl2 = fit(isc)
        better = (sl2 > 0) & (slx * slx > best * sl2)
        sc_new = slx / np.where(sl2 > 0, sl2, 1)
        scale = np.where(better, sc_new, scale)
        best = np.where(better, sc_new * slx, best)
    return np.where(zero, 0.0, scale).astype(np.float32)


def quantize_q6_K(w):
    """w: (rows, cols) float32 with cols % 256 == 0 -> (bytes (rows, cols/256*210) uint8, dequant)."""
    rows, cols = w.shape
    x = w.reshape(-1, 16, 16).astype(np.float32)
    nb = x.shape[0]
    sc = _make_qx_quants_rmse1(x.reshape(-1, 16)).reshape(nb, 16)
    idx = np.abs(sc).argmax(axis=1)
    max_scale = sc[np.arange(nb), idx]
    zero = np.abs(max_scale) < 1e-30
    iscale = np.where(zero, 0.0, -128.0 / np.where(zero, 1.0, max_scale))
    d = np.where(zero, 0.0, 1.0 / np.where(iscale == 0, 1.0, iscale)).astype(F16)
    scales = np.clip(np.rint(iscale[:, None] * sc), -128, 127).astype(np.int8)
    scales = np.where(zero[:, None], 0, scales).astype(np.int8)
    dj = d.astype(np.float32)[:, None] * scales.astype(np.float32)
    dj_safe = np.where(dj != 0, dj, 1.0)
    l = np.clip(np.rint(x / dj_safe[:, :, None]), -32, 31)
    L = np.where((dj != 0)[:, :, None], l + 32, 32).astype(np.uint8).reshape(nb, 256)
    deq = (dj[:, :, None] * (L.reshape(nb, 16, 16).astype(np.float32) - 32)).reshape(rows, cols)
    ql = np.zeros((nb, 128), np.uint8)
    qh = np.zeros((nb, 64), np.uint8)
    for h in (0, 1):  # two halves of 128 values
        j = 128 * h
        a, b, c, e = (L[:, j + o : j + o + 32] for o in (0, 32, 64, 96))
        ql[:, 64 * h : 64 * h + 32] = (a & 0xF) | ((c & 0xF) << 4)
        ql[:, 64 * h + 32 : 64 * h + 64] = (b & 0xF) | ((e & 0xF) << 4)
        qh[:, 32 * h : 32 * h + 32] = (a >> 4) | ((b >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6)
    blk = np.concatenate([ql, qh, scales.view(np.uint8), d.reshape(nb, 1).view(np.uint8)], axis=1)
    assert blk.shape[1] == 210
    return blk.reshape(rows, -1), deq.astype(np.float32)
