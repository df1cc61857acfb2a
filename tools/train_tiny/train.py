"""Trains the tiny LLaDA-architecture mask predictor with LLaDA's pre-training objective.

Objective (LLaDA paper, Eq. 3; GSAI-ML/LLaDA GUIDELINES.md `forward_process`): per sequence draw
t ~ U(0, 1], mask each token independently with probability p = (1 - eps) t + eps, predict the original
tokens at the masked positions; loss = sum over masked positions of CE / p, divided by B * T.
Position 0 always holds BOS (<|startoftext|>) and is never masked: `dllm run` always gives it.

Data: data/train.txt from corpus.py, tokenized with data/tokenizer.json from tok.py. Books are joined
with EOS; each training sequence is BOS + 255 tokens starting at a random paragraph start.

Reproducible: every random draw of step s comes from a generator seeded with (seed, s), so a run that
resumes from a checkpoint (--resume) continues exactly as an uninterrupted run would (same --steps).
Learning rate: linear warm-up, then cosine decay to 10% at --steps. A later, longer run: pass a larger
--steps with --resume (the cosine then stretches from the resumed step on; documented in the card).

Usage: nice -n 10 python train.py --data data --out runs/tiny --steps 1500 [--resume] [--threads 2]
"""

import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from model import Config, TinyLlada
from tok import BOS_ID, EOS_ID, MASK_ID

EPS = 1e-3


def load_ids(data_dir, split, tok):
    """Token ids of data/<split>.txt (books separated by an empty line, joined by EOS), cached as .npy."""
    cache = os.path.join(data_dir, f"{split}_ids.npy")
    if os.path.exists(cache):
        return np.load(cache)
    with open(os.path.join(data_dir, f"{split}.txt"), encoding="utf-8") as f:
        books = f.read().split("\n\n")
    ids = []
    for b in books:
        ids.extend(tok.encode(b.strip("\n") + "\n").ids)
        ids.append(EOS_ID)
    arr = np.array(ids, dtype=np.int16 if max(ids) < 32768 else np.int32)
    np.save(cache, arr)
    return arr


def paragraph_starts(ids, tok, seq):
    """Positions right after a token that ends in a newline (and book starts), with room for seq tokens."""
    nl = [i for t, i in tok.get_vocab().items() if t.endswith("\u010a")]  # 'Ċ' = byte-level '\n'
    is_nl = np.isin(ids, np.array(nl + [EOS_ID]))
    starts = np.concatenate([[0], np.nonzero(is_nl)[0] + 1])
    return starts[starts + seq <= len(ids)]


def make_batch(ids, starts, batch, seq, gen):
    """(batch, seq) int64: BOS then seq-1 corpus tokens from random paragraph starts."""
    pick = torch.randint(len(starts), (batch,), generator=gen).numpy()
    rows = [np.concatenate([[BOS_ID], ids[s : s + seq - 1]]) for s in starts[pick]]
    return torch.from_numpy(np.stack(rows).astype(np.int64))


def masked_loss(model, x, gen):
    """LLaDA's loss on one batch; returns (loss, number of masked tokens)."""
    B, T = x.shape
    t = torch.rand(B, generator=gen) * (1 - EPS) + EPS  # in (eps, 1]
    p = (1 - EPS) * t + EPS
    mask = torch.rand(B, T, generator=gen) < p[:, None]
    mask[:, 0] = False
    noisy = torch.where(mask, torch.full_like(x, MASK_ID), x)
    h = model.hidden(noisy)
    logits = model.logits_of(h[mask])  # the output layer only where the loss looks
    ce = F.cross_entropy(logits, x[mask], reduction="none")
    w = (1.0 / p)[:, None].expand(B, T)[mask]
    return (ce * w).sum() / (B * T), int(mask.sum())


def lr_at(step, total, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    f = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * f)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", default="runs/tiny")
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=256, help="training sequence length, <= --ctx")
    ap.add_argument("--ctx", type=int, default=256, help="model context (GGUF context_length)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (with a checkpoint) after this long")
    ap.add_argument("--stop-at", type=int, default=0, help="stop (with a checkpoint) at this step")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    tok = Tokenizer.from_file(os.path.join(a.data, "tokenizer.json"))
    ids = load_ids(a.data, "train", tok)
    starts = paragraph_starts(ids, tok, a.seq)
    if a.seq > a.ctx:
        raise SystemExit(f"--seq {a.seq} exceeds the model context --ctx {a.ctx}")
    cfg = Config(n_ctx=a.ctx)
    model = TinyLlada(cfg).to(a.device)
    decay = [p for n, p in model.p.items() if p.dim() == 2]
    no_decay = [p for n, p in model.p.items() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    ckpt_path = os.path.join(a.out, "ckpt.pt")
    step, elapsed = 0, 0.0
    if a.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location=a.device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, elapsed = ck["step"], ck["elapsed"]
        print(f"resumed at step {step}")
        lp = os.path.join(a.out, "log.jsonl")
        if os.path.exists(lp):  # drop the log of steps after the checkpoint: they are run again
            kept = [l for l in open(lp) if json.loads(l)["step"] <= step]
            with open(lp, "w") as f:
                f.writelines(kept)
    if a.stop_at and step >= a.stop_at:
        print(f"checkpoint is at step {step}, at or past --stop-at {a.stop_at}: nothing to do")
        return
    if step >= a.steps:  # a finished run started again (run_all.sh twice): no segment line, no steps
        print(f"checkpoint is at step {step}, at or past --steps {a.steps}: nothing to do")
        return
    n_params = sum(p.numel() for p in model.parameters())
    print(f"params {n_params}, train tokens {len(ids)}, sequences from {len(starts)} paragraph starts")
    log = open(os.path.join(a.out, "log.jsonl"), "a")
    with open(os.path.join(a.out, "segments.jsonl"), "a") as f:  # one line per (re)start, for the card
        f.write(json.dumps({"start_step": step, **vars(a)}) + "\n")

    def save():
        tmp = ckpt_path + ".tmp"
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                    "config": cfg.to_dict(), "args": vars(a)}, tmp)
        os.replace(tmp, ckpt_path)

    t0 = time.time()
    base_elapsed = elapsed
    while step < a.steps:
        gen = torch.Generator().manual_seed(a.seed * 1_000_003 + step)
        x = make_batch(ids, starts, a.batch, a.seq, gen).to(a.device)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps, a.lr, a.warmup)
        loss, n_masked = masked_loss(model, x, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        elapsed = base_elapsed + time.time() - t0
        log.write(json.dumps({"step": step, "loss": round(loss.item(), 5), "lr": opt.param_groups[0]["lr"],
                              "gnorm": round(float(gnorm), 4), "elapsed_s": round(elapsed, 1)}) + "\n")
        if step % 10 == 0:
            log.flush()
            print(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.2e} "
                  f"{elapsed / 60:.1f} min", flush=True)
        out_of_time = (a.max_minutes and (time.time() - t0) / 60 > a.max_minutes) or step == a.stop_at
        if step % a.ckpt_every == 0 or step == a.steps or out_of_time:
            save()
        if out_of_time:
            print(f"stopping at step {step} (--max-minutes / --stop-at)")
            break
    log.close()


if __name__ == "__main__":
    main()
