#!/usr/bin/env python3
"""Compare logits files row by row: `dllm logits` output (f32) against a reference (llama.cpp's f16
files in ../shared/reference/logits, or another `dllm logits` output).

  scripts/compare_logits.py OURS.f32 REFERENCE.(f16|f32) --vocab N [--label TEXT]
                            [--max-row 0.05 --max-median 0.03 --min-argmax 0.90]

Per row: relative RMS = ||ours - ref||_2 / ||ref||_2 and whether the argmax agrees (the lowest id on
ties, as numpy's argmax). The defaults are the CPU path's bounds against llama.cpp
(tests/cpu/reference_logits_test.cpp). Prints one JSON line; exits 1 when a bound fails, 2 on bad input.
Used by scripts/gpu-check.sh on the device machine, where numpy is present.
"""
import argparse
import json
import sys

import numpy as np


def load(path, vocab):
    dtype = np.float16 if path.endswith(".f16") else np.float32
    a = np.fromfile(path, dtype=dtype).astype(np.float64)
    if a.size == 0 or a.size % vocab:
        raise ValueError(f"{path}: {a.size} values is not a whole number of rows of {vocab}")
    return a.reshape(-1, vocab)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ours")
    ap.add_argument("reference")
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--label", default="")
    ap.add_argument("--max-row", type=float, default=0.05)
    ap.add_argument("--max-median", type=float, default=0.03)
    ap.add_argument("--min-argmax", type=float, default=0.90)
    a = ap.parse_args()
    try:
        ours, ref = load(a.ours, a.vocab), load(a.reference, a.vocab)
    except (OSError, ValueError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    if ours.shape != ref.shape:
        print(f"ERROR: shapes differ: {ours.shape} vs {ref.shape}", file=sys.stderr)
        return 2
    finite = bool(np.isfinite(ours).all())
    rel = np.linalg.norm(ours - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)
    agree = float(np.mean(np.argmax(ours, axis=1) == np.argmax(ref, axis=1)))
    ok = finite and rel.max() <= a.max_row and np.median(rel) <= a.max_median and agree >= a.min_argmax
    print(json.dumps({"label": a.label, "rows": int(ref.shape[0]), "finite": finite,
                      "rel_rms_max": float(rel.max()), "rel_rms_median": float(np.median(rel)),
                      "argmax_agreement": agree, "bounds": [a.max_row, a.max_median, a.min_argmax],
                      "pass": bool(ok)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
