"""Held-out masked-token accuracy at mask ratio 0.15 vs a unigram baseline.

Held-out text: data/heldout.txt (a whole book never seen in training, see corpus.py). Windows of
BOS + 255 tokens start at evenly spaced paragraph starts; in each, round(0.15 * 255) = 38 positions
(never BOS) are replaced by the mask id, chosen with a fixed seed. Accuracy = share of masked positions
where the argmax of the logits is the original token.
Unigram baseline: always predict the most frequent token of the training data (the best a model that
ignores the context can do for argmax accuracy).

With --gguf and --dllm, the same windows are also scored from our runtime's logits on that file
(`dllm logits`), i.e. the accuracy of the shipped Q4_K_M model.

Usage: python evaluate.py --ckpt runs/tiny/ckpt.pt [--gguf models/X.gguf --dllm build/bin/dllm] --json F
"""

import argparse
import json
import os

import numpy as np
import torch
from tokenizers import Tokenizer

from model import Config, TinyLlada
from parity import runtime_logits
from tok import BOS_ID, MASK_ID
from train import load_ids, paragraph_starts

RATIO = 0.15


def windows(data_dir, n_windows, seq):
    tok = Tokenizer.from_file(os.path.join(data_dir, "tokenizer.json"))
    ids = load_ids(data_dir, "heldout", tok)
    starts = paragraph_starts(ids, tok, seq)
    pick = starts[np.linspace(0, len(starts) - 1, n_windows).astype(int)]
    x = np.stack([np.concatenate([[BOS_ID], ids[s : s + seq - 1]]) for s in pick]).astype(np.int64)
    rng = np.random.default_rng(2024)
    k = int(round(RATIO * (seq - 1)))
    mask = np.zeros_like(x, dtype=bool)
    for r in range(len(x)):
        mask[r, 1 + rng.choice(seq - 1, size=k, replace=False)] = True
    return tok, x, mask


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--windows", type=int, default=64)
    ap.add_argument("--gguf")
    ap.add_argument("--gguf-windows", type=int, default=16)
    ap.add_argument("--dllm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ck = torch.load(a.ckpt, map_location="cpu")
    cfg = Config(**ck["config"])
    model = TinyLlada(cfg)
    model.load_state_dict(ck["model"])
    model.eval()
    tok, x, mask = windows(a.data, a.windows, cfg.n_ctx)
    noisy = np.where(mask, MASK_ID, x)
    with torch.no_grad():
        logits = model(torch.from_numpy(noisy))
        pred = logits.argmax(-1).numpy()
        ce = torch.nn.functional.cross_entropy(logits[torch.from_numpy(mask)], torch.from_numpy(x[mask])).item()
    acc = float((pred[mask] == x[mask]).mean())
    train_ids = load_ids(a.data, "train", tok)
    counts = np.bincount(train_ids.astype(np.int64), minlength=cfg.n_vocab)
    top = int(counts.argmax())
    base = float((x[mask] == top).mean())
    out = {"mask_ratio": RATIO, "windows": int(len(x)), "masked_tokens": int(mask.sum()),
           "accuracy": acc, "masked_ce": ce, "unigram_token": tok.id_to_token(top), "unigram_accuracy": base,
           "ratio_vs_unigram": acc / base, "step": int(ck["step"])}
    print(f"held-out masked-token accuracy at ratio {RATIO}: {acc * 100:.2f}% over {mask.sum()} tokens "
          f"(CE {ce:.3f}); unigram baseline ('{tok.id_to_token(top)}') {base * 100:.2f}%; ratio {acc / base:.2f}x")
    if a.gguf:
        n = min(a.gguf_windows, len(x))
        hits = 0
        for r in range(n):
            lg = runtime_logits(a.dllm, a.gguf, noisy[r].tolist(), cfg.n_vocab)
            hits += int((lg.argmax(1)[mask[r]] == x[r][mask[r]]).sum())
        g_acc = hits / float(mask[:n].sum())
        t_acc = float((pred[:n][mask[:n]] == x[:n][mask[:n]]).mean())
        out.update({"gguf": os.path.basename(a.gguf), "gguf_windows": n, "gguf_accuracy": g_acc,
                    "torch_accuracy_same_windows": t_acc})
        print(f"{os.path.basename(a.gguf)} via dllm logits, first {n} windows: {g_acc * 100:.2f}% "
              f"(PyTorch F32 on the same windows: {t_acc * 100:.2f}%)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    if acc < 5 * base:
        raise SystemExit("FAIL: accuracy below 5x the unigram baseline")


if __name__ == "__main__":
    main()
