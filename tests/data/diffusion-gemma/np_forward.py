#!/usr/bin/env python3
"""Float64 numpy forward of a `diffusion-gemma` or `gemma4` GGUF, written from the formulas, not from ggml.

It made extra/*.exact64.f32 and the mutation figures in README.md. It reads the GGUF (any ggml type gguf-py
can dequantize) through the gguf-py given by --gguf-py and computes in float64 with dequantized weights and no
activation rounding; --gelu-f16 instead rounds GELU's input and output to IEEE half, as ggml-cpu's lookup
table does.

  diffusion-gemma: one forward over [prompt | canvas]; writes the canvas rows (and with --prompt-out the prompt
                   rows), float32 little-endian [rows][n_vocab]. --sc PREV.f32 adds self-conditioning from the
                   previous step's raw canvas logits, scaled by --sc-temp-inv before the softmax.
  gemma4 --causal: causal attention (sliding layers keep the last `sliding_window` keys); writes every row.

--mutate applies a deliberate error, to size what a test of that detail can see:
  swap_scales         prompt rows use layer_output_scale and canvas rows enc_layer_output_scale
  no_swa_cut          on sliding layers the canvas sees the whole prompt
  swa_cut_off_by_one  on sliding layers the canvas sees the last sliding_window prompt tokens, one too many

The model, as llama.cpp PR #24423 (src/models/diffusion-gemma.cpp, gemma4-common.h) computes it:
  x     = token_embd[tok] * sqrt(n_embd); canvas rows: x = rms_norm(x [+ SC]) with no weight
  SC    = down(gelu_tanh(gate(n)) * up(n)), n = rms_norm(softmax(prev * temp_inv) @ token_embd * sqrt(n_embd))
          * self_cond_pre_norm
  layer: h = rms_norm(x) * attn_norm
         q = rope(rms_norm_head(h Wq) * q_norm); k = rope(rms_norm_head(h Wk) * k_norm)
         v = rms_norm_head(h Wv) with no weight; global layers have no Wv and use h Wk (before k_norm, RoPE)
         RoPE: NEOX over the whole head; global layers base rope.freq_base and rope_freqs as frequency divisors
         (1e30 = not rotated), sliding layers base rope.freq_base_swa
         attn = softmax(q k^T * 1.0 + mask) v, grouped-query heads (query head i uses KV head i / (n_head/n_kv))
         a = rms_norm(attn Wo) * post_attention_norm + x
         dense = rms_norm(down(gelu_tanh(gate(m)) * up(m))) * post_ffw_norm_1, m = rms_norm(a) * ffn_norm
         router = softmax((rms_norm(a) / sqrt(n_embd) * ffn_gate_inp.scale) Wr); top-k; weights renormalised
         moe = rms_norm(sum_k w_k * ffn_down_exps.scale[e] * down_e(gelu_tanh(g_e) * u_e)) * post_ffw_norm_2,
               [g_e | u_e] = gate_up_e(rms_norm(a) * pre_ffw_norm_2)
         x = (rms_norm(dense + moe) * post_ffw_norm + a) * (prompt rows: enc_layer_output_scale,
                                                              canvas rows: layer_output_scale)
  logits = softcap * tanh((rms_norm(x) * output_norm) token_embd^T / softcap)
  mask (additive, -inf where not allowed), P = prompt length:
         prompt row q: keys k <= q (sliding layers also q - k < sliding_window); never the canvas
         canvas row: every canvas key; global layers every prompt key; sliding layers prompt keys
                     k >= P - sliding_window + 1 (the last sliding_window - 1 prompt tokens)
"""
import argparse
import sys

import numpy as np

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument('--gguf-py', required=True, help="folder holding the fork's gguf package")
ap.add_argument('model')
ap.add_argument('--prompt', required=True, help='token ids, whitespace separated')
ap.add_argument('--canvas', help='canvas token ids (diffusion-gemma)')
ap.add_argument('--out', required=True)
ap.add_argument('--prompt-out')
ap.add_argument('--sc', help="previous step's canvas logits, float32 [C][n_vocab]")
ap.add_argument('--sc-temp-inv', type=float, default=1.0)
ap.add_argument('--gelu-f16', action='store_true')
ap.add_argument('--causal', action='store_true')
ap.add_argument('--mutate', default='', help='comma list: swap_scales, no_swa_cut, swa_cut_off_by_one')
args = ap.parse_args()
sys.path.insert(0, args.gguf_py)
import gguf  # noqa: E402
from gguf.quants import dequantize  # noqa: E402

mut = set(filter(None, args.mutate.split(',')))
reader = gguf.GGUFReader(args.model)
arch = bytes(reader.fields['general.architecture'].parts[-1]).decode()


def kv(name, default=None):
    f = reader.fields.get(name)
    if f is None:
        return default
    vals = [f.parts[i].tolist()[0] for i in f.data]
    return vals if f.types[0] == gguf.GGUFValueType.ARRAY else vals[0]


W = {t.name: dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(x) for x in reversed(t.shape)])
     for t in reader.tensors}  # numpy order = reversed ggml ne

A = arch + '.'
n_embd, n_layer = kv(A + 'embedding_length'), kv(A + 'block_count')
n_head, n_kv = kv(A + 'attention.head_count'), kv(A + 'attention.head_count_kv')
n_kv = n_kv if isinstance(n_kv, list) else [n_kv] * n_layer
swa = kv(A + 'attention.sliding_window_pattern')
n_swa, eps = kv(A + 'attention.sliding_window'), kv(A + 'attention.layer_norm_rms_epsilon')
base_full, base_swa = kv(A + 'rope.freq_base'), kv(A + 'rope.freq_base_swa')
rot_full, rot_swa = kv(A + 'rope.dimension_count'), kv(A + 'rope.dimension_count_swa')
hd_full, hd_swa = kv(A + 'attention.key_length'), kv(A + 'attention.key_length_swa')
n_used, softcap = kv(A + 'expert_used_count'), kv(A + 'final_logit_softcapping', 0.0)
E = W['token_embd.weight']  # [n_vocab, n_embd]


def rms(x, w=None):
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y * w if w is not None else y


def gelu(x):  # tanh approximation (ggml_gelu / ggml_geglu)
    if not args.gelu_f16:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    xh = x.astype(np.float16).astype(np.float64)
    y = (0.5 * xh * (1 + np.tanh(np.sqrt(2 / np.pi) * (xh + 0.044715 * xh ** 3)))).astype(np.float16)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, y.astype(np.float64)))


def rope(x, pos, base, n_rot, freq_div):  # NEOX pairs (i, i + n_rot/2); x [T, heads, hd]
    half = n_rot // 2
    theta = base ** (-np.arange(half) * 2.0 / n_rot)
    if freq_div is not None:
        theta = theta / freq_div
    ang = pos[:, None] * theta[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., :half].copy(), x[..., half:n_rot].copy()
    x = x.copy()
    x[..., :half] = a * c - b * s
    x[..., half:n_rot] = b * c + a * s
    return x


prompt = [int(v) for v in open(args.prompt).read().split()]
canvas = [int(v) for v in open(args.canvas).read().split()] if args.canvas else []
toks = prompt + canvas
P, T = len(prompt), len(toks)
x = E[toks] * np.sqrt(n_embd)
if not args.causal:
    xc = x[P:]
    if args.sc:
        prev = np.fromfile(args.sc, dtype='<f4').reshape(len(canvas), -1).astype(np.float64) * args.sc_temp_inv
        prob = np.exp(prev - prev.max(1, keepdims=True))
        prob /= prob.sum(1, keepdims=True)
        n = rms((prob @ E) * np.sqrt(n_embd), W['self_cond_pre_norm.weight'])
        xc = xc + (gelu(n @ W['self_cond_gate.weight'].T) * (n @ W['self_cond_up.weight'].T)) @ W['self_cond_down.weight'].T
    x = np.concatenate([x[:P], rms(xc)], 0)
pos = np.arange(T, dtype=np.float64)

qi, ki = np.arange(T)[:, None], np.arange(T)[None, :]
if args.causal:
    allow_full = ki <= qi
    allow_swa = allow_full & (qi - ki < n_swa)
else:
    q_canvas, k_canvas = qi >= P, ki >= P
    prompt_causal = ~q_canvas & ~k_canvas & (ki <= qi)
    lo = P - n_swa + 1
    if 'no_swa_cut' in mut:
        lo = -T
    if 'swa_cut_off_by_one' in mut:
        lo = P - n_swa
    allow_full = prompt_causal | q_canvas
    allow_swa = (prompt_causal & (qi - ki < n_swa)) | (q_canvas & (k_canvas | (ki >= lo)))

for il in range(n_layer):
    p = f'blk.{il}.'
    is_swa = bool(swa[il])
    hd, nk = (hd_swa if is_swa else hd_full), n_kv[il]
    h = rms(x, W[p + 'attn_norm.weight'])
    q = rms((h @ W[p + 'attn_q.weight'].T).reshape(T, n_head, hd), W[p + 'attn_q_norm.weight'])
    k_raw = (h @ W[p + 'attn_k.weight'].T).reshape(T, nk, hd)
    v = rms((h @ W[p + 'attn_v.weight'].T).reshape(T, nk, hd) if p + 'attn_v.weight' in W else k_raw)
    k = rms(k_raw, W[p + 'attn_k_norm.weight'])
    base, n_rot, fd = (base_swa, rot_swa, None) if is_swa else (base_full, rot_full, W['rope_freqs.weight'])
    q, k = rope(q, pos, base, n_rot, fd), rope(k, pos, base, n_rot, fd)
    allow = allow_swa if is_swa else allow_full
    group = n_head // nk
    att = np.zeros((T, n_head, hd))
    for hh in range(n_head):
        s = np.where(allow, q[:, hh] @ k[:, hh // group].T, -np.inf)  # attention scale 1.0
        s = np.exp(s - s.max(1, keepdims=True))
        att[:, hh] = (s / s.sum(1, keepdims=True)) @ v[:, hh // group]
    a = rms(att.reshape(T, n_head * hd) @ W[p + 'attn_output.weight'].T, W[p + 'post_attention_norm.weight']) + x
    m = rms(a, W[p + 'ffn_norm.weight'])
    dense = (gelu(m @ W[p + 'ffn_gate.weight'].T) * (m @ W[p + 'ffn_up.weight'].T)) @ W[p + 'ffn_down.weight'].T
    dense = rms(dense, W[p + 'post_ffw_norm_1.weight'])
    r = (rms(a) / np.sqrt(n_embd) * W[p + 'ffn_gate_inp.scale']) @ W[p + 'ffn_gate_inp.weight'].T
    pr = np.exp(r - r.max(1, keepdims=True))
    pr /= pr.sum(1, keepdims=True)
    sel = np.argsort(-pr, axis=1, kind='stable')[:, :n_used]
    wsel = np.take_along_axis(pr, sel, 1)
    wsel /= wsel.sum(1, keepdims=True)
    mi = rms(a, W[p + 'pre_ffw_norm_2.weight'])
    gu, dn, dscale = W[p + 'ffn_gate_up_exps.weight'], W[p + 'ffn_down_exps.weight'], W[p + 'ffn_down_exps.scale']
    nf = gu.shape[1] // 2
    moe = np.zeros_like(x)
    for t in range(T):
        for j in range(n_used):
            e = sel[t, j]
            z = gu[e] @ mi[t]
            moe[t] += wsel[t, j] * dscale[e] * ((gelu(z[:nf]) * z[nf:]) @ dn[e].T)
    moe = rms(moe, W[p + 'post_ffw_norm_2.weight'])
    x = rms(dense + moe, W[p + 'post_ffw_norm.weight']) + a
    dec = W[p + 'layer_output_scale.weight'][0] if p + 'layer_output_scale.weight' in W else 1.0
    enc = W[p + 'enc_layer_output_scale.weight'][0] if p + 'enc_layer_output_scale.weight' in W else dec
    if 'swap_scales' in mut:
        dec, enc = enc, dec
    x = x * dec if args.causal else np.concatenate([x[:P] * enc, x[P:] * dec], 0)

logits = rms(x, W['output_norm.weight']) @ W.get('output.weight', E).T
if softcap:
    logits = softcap * np.tanh(logits / softcap)
rows = logits if args.causal else logits[P:]
rows.astype('<f4').tofile(args.out)
if args.prompt_out and not args.causal:
    logits[:P].astype('<f4').tofile(args.prompt_out)
