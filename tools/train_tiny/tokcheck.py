"""Checks that our runtime's tokenizer (`dllm tokenize` on the exported GGUF) gives the same ids as the
HF tokenizer the model was trained with, on held-out paragraphs (plus BOS in front, add_bos_token).

Usage: python tokcheck.py --gguf X.gguf --dllm build/bin/dllm [--n 40]
"""
import argparse
import json
import subprocess

from tokenizers import Tokenizer

from tok import BOS_ID


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--dllm", required=True)
    ap.add_argument("--data", default="data")
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--json")
    a = ap.parse_args()
    tok = Tokenizer.from_file(f"{a.data}/tokenizer.json")
    paras = [p for p in open(f"{a.data}/heldout.txt", encoding="utf-8").read().split("\n") if len(p) > 40]
    step = max(1, len(paras) // a.n)
    bad = 0
    for p in paras[::step][: a.n]:
        r = subprocess.run([a.dllm, "tokenize", "--model", a.gguf, "--no-chat", p], capture_output=True,
                           text=True, check=True)
        got = [int(x) for x in r.stdout.split()]
        want = [BOS_ID] + tok.encode(p).ids
        if got != want:
            bad += 1
            print("MISMATCH:", p[:60], got[:12], want[:12])
    print(f"{a.n - bad}/{a.n} held-out paragraphs tokenized identically")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"paragraphs": a.n, "identical": a.n - bad}, f)
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
