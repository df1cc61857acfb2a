"""Logits parity: our runtime (`dllm logits`) on the exported GGUFs vs an independent float64 forward of
the trained weights taken straight from the PyTorch checkpoint.

The float64 forward below is written from the LLaDA model description (GSAI-ML/LLaDA modeling_llada.py:
RMSNorm, rotary embedding, SwiGLU, no attention mask) with numpy only; it shares no code with model.py
or with the runtime. RoPE is applied to adjacent pairs (2i, 2i+1), the pairing the model was trained with
and the one ggml's NORM mode uses (llada in llama.cpp).

Input: BOS + the first tokens of the held-out book, with about a third of the positions replaced by the
mask id (what the runtime sees during generation).

Reports, per logits row, relative RMS = rms(runtime - ref) / rms(ref):
  F32 GGUF: must be <= 1e-4 on every row (exit 1 otherwise);
  Q4_K_M GGUF: reported (plus argmax agreement with the float64 reference).
Writes the numbers to --json.

Usage: python parity.py --ckpt runs/tiny/ckpt.pt --f32 F.gguf --q4km Q.gguf --dllm ../../build/bin/dllm
"""

import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
import torch
from tokenizers import Tokenizer

from tok import BOS_ID, MASK_ID


def forward_f64(W, cfg, ids):
    """Logits (T, V) in float64. W: tensor name -> float64 array (n_out, n_in)."""
    d, H, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    hd, eps, base = d // H, cfg["rms_eps"], cfg["rope_base"]
    T = len(ids)

    def norm(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    pos = np.arange(T, dtype=np.float64)[:, None]
    theta = pos * base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)[None, :]  # (T, hd/2)
    c, s = np.cos(theta), np.sin(theta)

    def rope(x):  # x (T, H, hd)
        out = np.empty_like(x)
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * c[:, None, :] - b * s[:, None, :]
        out[..., 1::2] = a * s[:, None, :] + b * c[:, None, :]
        return out

    x = W["token_embd"][ids]
    for i in range(L):
        p = f"blk_{i}_"
        h = norm(x, W[p + "attn_norm"])
        q = rope((h @ W[p + "attn_q"].T).reshape(T, H, hd))
        k = rope((h @ W[p + "attn_k"].T).reshape(T, H, hd))
        v = (h @ W[p + "attn_v"].T).reshape(T, H, hd)
        sc = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd)
        sc = np.exp(sc - sc.max(axis=-1, keepdims=True))
        sc /= sc.sum(axis=-1, keepdims=True)
        a = np.einsum("hts,shd->thd", sc, v).reshape(T, d)
        x = x + a @ W[p + "attn_output"].T
        h = norm(x, W[p + "ffn_norm"])
        g = h @ W[p + "ffn_gate"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "ffn_up"].T)) @ W[p + "ffn_down"].T
    return norm(x, W["output_norm"]) @ W["output"].T


def gguf_weights(path):
    """Tensor name (model.py style key without '_weight') -> float64 weights dequantized by the gguf
    package (gguf.quants.dequantize, independent of kquants.py and of the runtime)."""
    import gguf

    r = gguf.GGUFReader(path)
    W = {}
    for t in r.tensors:
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        shape = [int(x) for x in reversed(t.shape.tolist())]
        key = t.name[: -len(".weight")].replace(".", "_")
        W[key] = a.reshape(shape) if len(shape) > 1 else a.reshape(-1)
    return W


def runtime_logits(dllm, model, ids, V):
    with tempfile.TemporaryDirectory() as tmp:
        tf, of = os.path.join(tmp, "ids.i32"), os.path.join(tmp, "logits.f32")
        np.asarray(ids, dtype="<i4").tofile(tf)
        subprocess.run([dllm, "logits", "--model", model, "--tokens-file", tf, "--out", of], check=True)
        return np.fromfile(of, dtype="<f4").reshape(len(ids), V).astype(np.float64)


def row_rel_rms(a, ref):
    return np.sqrt(((a - ref) ** 2).mean(axis=1)) / np.sqrt((ref ** 2).mean(axis=1))


def parity_input(tok_path, heldout_path, n=200, seed=7):
    tok = Tokenizer.from_file(tok_path)
    with open(heldout_path, encoding="utf-8") as f:
        text = f.read()
    ids = [BOS_ID] + tok.encode(text[20000:40000]).ids[: n - 1]
    rng = np.random.default_rng(seed)
    ids = np.array(ids)
    m = rng.random(n) < 0.33
    m[0] = False
    ids[m] = MASK_ID
    return ids.tolist()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--f32", required=True)
    ap.add_argument("--q4km")
    ap.add_argument("--dllm", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--json")
    a = ap.parse_args()
    ck = torch.load(a.ckpt, map_location="cpu")
    cfg = ck["config"]
    W = {k[2:][: -len("_weight")]: v.double().numpy() for k, v in ck["model"].items() if k.startswith("p.")}
    ids = parity_input(os.path.join(a.data, "tokenizer.json"), os.path.join(a.data, "heldout.txt"))
    ref = forward_f64(W, cfg, np.array(ids))
    V = cfg["n_vocab"]
    out = {"tokens": len(ids), "masked": int(sum(i == MASK_ID for i in ids))}
    f32 = runtime_logits(a.dllm, a.f32, ids, V)
    r = row_rel_rms(f32, ref)
    out["f32_rel_rms_max"] = float(r.max())
    out["f32_rel_rms_median"] = float(np.median(r))
    out["f32_argmax_agree"] = float((f32.argmax(1) == ref.argmax(1)).mean())
    print(f"F32 GGUF vs float64 checkpoint forward: relative RMS per row max {r.max():.3e}, "
          f"median {np.median(r):.3e} over {len(ids)} rows")
    ok = bool(r.max() <= 1e-4)
    if a.q4km:
        q = runtime_logits(a.dllm, a.q4km, ids, V)
        rq = row_rel_rms(q, ref)
        rqf = row_rel_rms(q, f32)
        # The same float64 forward on the Q4_K_M file's own (dequantized) weights: what is left is the
        # runtime's Q8_K rounding of activations, so a decoder that disagreed with kquants.py shows here.
        rd = row_rel_rms(q, forward_f64(gguf_weights(a.q4km), cfg, np.array(ids)))
        out["q4km_rel_rms_vs_dequant_f64_max"] = float(rd.max())
        out["q4km_rel_rms_vs_dequant_f64_median"] = float(np.median(rd))
        print(f"Q4_K_M GGUF vs float64 forward of its dequantized weights: relative RMS per row median "
              f"{np.median(rd):.4f}, max {rd.max():.4f} (Q8_K activation rounding only)")
        out["q4km_rel_rms_vs_f32_max"] = float(rqf.max())
        out["q4km_rel_rms_vs_f32_median"] = float(np.median(rqf))
        out["q4km_rel_rms_vs_f32_mean"] = float(rqf.mean())
        out["q4km_argmax_agree_vs_f32"] = float((q.argmax(1) == f32.argmax(1)).mean())
        print(f"Q4_K_M GGUF vs F32 GGUF logits: relative RMS per row median {np.median(rqf):.4f}, "
              f"mean {rqf.mean():.4f}, max {rqf.max():.4f}; argmax agreement "
              f"{out['q4km_argmax_agree_vs_f32'] * 100:.1f}% (vs float64 ref: median {np.median(rq):.4f})")
    out["f32_pass"] = ok
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    if not ok:
        raise SystemExit("FAIL: F32 parity above 1e-4")


if __name__ == "__main__":
    main()
