"""Writes the model card models/README.md and the loss curve PNG from the run's own records:
corpus_manifest.json (data), runs/tiny/log.jsonl (loss per step), runs/tiny/ckpt.pt (step, time),
runs/tiny/eval.json (evaluate.py), runs/tiny/parity.json (parity.py) and one greedy generation by
the runtime (`dllm run`). No number in the card is typed by hand.

Usage: python make_card.py --run runs/tiny --model ../../models/tiny-llada-fairytales-q4km.gguf \
         --dllm ../../build/bin/dllm --out ../../models
"""

import argparse
import json
import os
import subprocess

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from model import Config  # noqa: E402


def loss_curve(log, png):
    steps = np.array([r["step"] for r in log])
    loss = np.array([r["loss"] for r in log])
    k = 20
    smooth = np.convolve(loss, np.ones(k) / k, mode="valid") if len(loss) > k else loss
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(steps, loss, color="#9ecae1", lw=0.8, label="per step")
    ax.plot(steps[len(steps) - len(smooth):], smooth, color="#08519c", lw=1.8, label=f"mean of {k} steps")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("LLaDA loss (CE on masked tokens, weighted 1/t)")
    ax.set_title("tiny-llada-fairytales: training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)
    return float(smooth[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="runs/tiny")
    ap.add_argument("--model", required=True)
    ap.add_argument("--dllm", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "corpus_manifest.json")) as f:
        man = json.load(f)
    log = [json.loads(line) for line in open(os.path.join(a.run, "log.jsonl"))]
    ck = torch.load(os.path.join(a.run, "ckpt.pt"), map_location="cpu")
    cfg, args = Config(**ck["config"]), ck["args"]
    ev = json.load(open(os.path.join(a.run, "eval.json")))
    par = json.load(open(os.path.join(a.run, "parity.json")))
    tc = json.load(open(os.path.join(a.run, "tokcheck.json")))
    base = os.path.splitext(os.path.basename(a.model))[0]
    png = base + "-loss.png"
    final_loss = loss_curve(log, os.path.join(a.out, png))
    gen = subprocess.run([a.dllm, "run", "--model", a.model, "Once upon a time", "--max-tokens", "32",
                          "--temperature", "0", "--no-chat", "--json"], capture_output=True, check=True, text=True)
    sample = json.loads(gen.stdout)["text"]
    segs = [json.loads(line) for line in open(os.path.join(a.run, "segments.jsonl"))]
    ends = [g["start_step"] for g in segs[1:]] + [ck["step"]]
    tokens_seen = sum((e - g["start_step"]) * g["batch"] * g["seq"] for g, e in zip(segs, ends))
    seg_text = "; ".join(f"steps {g['start_step']}-{e}: `--steps {g['steps']} --batch {g['batch']} --seq {g['seq']} "
                         f"--lr {g['lr']:g} "
                         f"--warmup {g['warmup']}" + (f" --max-minutes {g['max_minutes']:g}" if g['max_minutes'] else "")
                         + ("`" if not g['resume'] else " --resume`") for g, e in zip(segs, ends))
    n_params = sum(v.numel() for k, v in ck["model"].items())
    size = os.path.getsize(a.model)

    if ev["ratio_vs_unigram"] >= 5:
        status = f"Status: meets issue 8's bar (held-out accuracy {ev['ratio_vs_unigram']:.1f}x the unigram baseline)."
    else:
        status = (f"**Status: UNDERTRAINED. Held-out masked-token accuracy is only {ev['ratio_vs_unigram']:.2f}x the "
                  f"unigram baseline (issue 8 asks for >= 5x).** {ck['step']} steps on 2 shared CPU cores were not "
                  "enough to leave the unigram plateau; continue with `train.py --resume --steps N` (more CPU time "
                  "or `--device cuda`) and rerun the export and checks (`run_all.sh`).")
    rows = "\n".join(f"| `{e['path']}` | {e['bytes']:,} | `{e['sha256']}` |" for e in man["train"])
    held = "\n".join(f"| `{e['path']}` | {e['bytes']:,} | `{e['sha256']}` |" for e in man["heldout"])
    card = f"""# {base}.gguf: a tiny masked-diffusion LM trained here (demo / test model)

A real, if very small, LLaDA-architecture mask predictor trained from scratch on CPU with LLaDA's
masked-diffusion objective on public-domain fairy tales. It exists so that `dllm run` works offline
and so that tests see a trained model (confident and uncertain positions, real words), not random
weights. It writes fairy-tale-flavoured English of poor coherence (sample below);
for real use get LLaDA-8B-Instruct
(`./dllm pull mradermacher/LLaDA-8B-Instruct-GGUF:Q4_K_M`).

{status}

Everything below was written by `tools/train_tiny/make_card.py` from the run's own records.

## Files

| file | what |
|---|---|
| `{os.path.basename(a.model)}` | Q4_K_M GGUF, {size:,} bytes (arch `llada`, tokenizer inside, no chat template) |
| `{png}` | training loss curve |
| F32 GGUF | not committed; `tools/train_tiny/run_all.sh` regenerates it (`runs/tiny/tiny-llada-fairytales-f32.gguf`) |

## Data

Project Gutenberg books, public domain in the USA, read from the public GitHub repository
`{man['repository']}` at commit `{man['commit']}` (one file per book). `tools/train_tiny/corpus.py` cuts the
Project Gutenberg header and licence footer, joins wrapped lines into paragraphs, maps typographic quotes
and dashes to ASCII; it refuses files whose sha256 differs from `tools/train_tiny/corpus_manifest.json`.
Licence of the texts: {man['licence']}.

Training books:

| path in the repository | bytes | sha256 |
|---|---|---|
{rows}

Held-out book (never trained on; used for the accuracy below):

| path in the repository | bytes | sha256 |
|---|---|---|
{held}

## Tokenizer

Byte-level BPE trained on the training text with HF `tokenizers` (`tools/train_tiny/tok.py`): GPT-2
pre-tokenizer regex (GGUF `tokenizer.ggml.pre = gpt2`), {cfg.n_vocab - 6} learned tokens, then LLaDA's
control tokens: 4090 `<|endoftext|>` (EOS, padding), 4091 `<|startoftext|>` (BOS, added in front),
4092 `<|mdm_mask|>` (mask id), 4093 `<|start_header_id|>`, 4094 `<|end_header_id|>`, 4095 `<|eot_id|>`.
Our runtime's tokenizer (`dllm tokenize` on the GGUF) gives the HF tokenizer's ids on {tc['identical']} of
{tc['paragraphs']} held-out paragraphs (`tools/train_tiny/tokcheck.py`).

## Architecture

LLaDA (llama.cpp arch `llada`): {cfg.n_layer} layers, hidden {cfg.n_embd}, {cfg.n_head} heads of
{cfg.head_dim}, SwiGLU FFN {cfg.n_ff}, RMSNorm (eps {cfg.rms_eps:g}), RoPE base {cfg.rope_base:g} in ggml
NORM mode (adjacent pairs, trained that way, so no q/k permutation on export), no biases, bidirectional
attention, separate `output.weight`, context {cfg.n_ctx}, vocabulary {cfg.n_vocab}. {n_params:,} parameters.
Q4_K_M mix as llama.cpp makes it: `output.weight` and layers 2-3 `attn_v`/`ffn_down` Q6_K, other
matrices Q4_K, norms F32 (quantizer: `tools/train_tiny/kquants.py`, checked bit for bit against
`gguf.quants.dequantize`).

## Training

`tools/train_tiny/train.py` (PyTorch {torch.__version__.split('+')[0]}, CPU, seed {args['seed']}): LLaDA's
objective: t ~ U(0, 1], each token masked with probability t (BOS never), cross-entropy on the masked
positions weighted 1/t. Sequences: BOS + (length - 1) tokens from a random paragraph start. The first
segment below trains at length {segs[0]['seq']} (more sequences, hence masking ratios, per CPU second); the last at
length {segs[-1]['seq']} with the same tokens per step, so that every RoPE position of the {cfg.n_ctx}-token context
(where `dllm run`'s canvas and the held-out windows reach) has been trained. q/k weights start
at std 1/sqrt({cfg.n_embd}) (others 0.02): with 0.02 everywhere an earlier run stayed at the unigram
solution (attention uniform) for its whole CPU budget. AdamW
(betas 0.9/0.95, weight decay {args['wd']}), peak learning rate {args['lr']:g}, {args['warmup']} warm-up steps,
cosine decay to 10% at the segment's `--steps` (stretched from the resumed step), batch x length per segment
below, gradient clip 1.0.

- runs of train.py (seed {args['seed']}): {seg_text}
- steps run: **{ck['step']}** of the {args['steps']} planned ({tokens_seen:,} tokens, about
  {tokens_seen / 2_057_767:.2f} passes over the {2_057_767:,} training tokens)
- training time: **{ck['elapsed'] / 60:.1f} min** wall clock on 2 shared CPU cores (niced, 2 threads)
- final loss (mean of the last 20 steps): **{final_loss:.3f}**

![loss curve]({png})

To train longer: `python train.py --resume --steps N` continues from `runs/tiny/ckpt.pt` (same data order
and masks as an uninterrupted run; a larger N stretches the cosine from there). On a GPU add
`--device cuda` (and a larger `--batch`).

## Checks

Held-out masked-token accuracy (`tools/train_tiny/evaluate.py`, mask ratio {ev['mask_ratio']}, {ev['windows']}
windows of {cfg.n_ctx} tokens from the held-out book, {ev['masked_tokens']:,} masked tokens, PyTorch F32):

| predictor | accuracy |
|---|---|
| this model (argmax) | **{ev['accuracy'] * 100:.2f}%** (masked-token cross-entropy {ev['masked_ce']:.3f}) |
| unigram baseline (always `{ev['unigram_token']}`, the most frequent training token) | {ev['unigram_accuracy'] * 100:.2f}% |
| ratio | **{ev['ratio_vs_unigram']:.2f}x** (required: >= 5x) |
| this Q4_K_M file through `dllm logits`, first {ev.get('gguf_windows', 0)} windows | {ev.get('gguf_accuracy', float('nan')) * 100:.2f}% (PyTorch F32 on the same windows: {ev.get('torch_accuracy_same_windows', float('nan')) * 100:.2f}%) |

Runtime parity (`tools/train_tiny/parity.py`; {par['tokens']} positions of held-out text, {par['masked']}
of them masked; reference: a float64 numpy forward of the checkpoint's weights written from the LLaDA
model code, independent of the runtime and of the training code):

| comparison | relative RMS per logits row |
|---|---|
| `dllm logits` on the F32 GGUF vs float64 reference | max **{par['f32_rel_rms_max']:.2e}**, median {par['f32_rel_rms_median']:.2e} (required: <= 1e-4) |
| `dllm logits` on this Q4_K_M file vs float64 forward of its own dequantized weights (`gguf.quants.dequantize`): only the runtime's Q8_K activation rounding remains | median {par['q4km_rel_rms_vs_dequant_f64_median']:.4f}, max {par['q4km_rel_rms_vs_dequant_f64_max']:.4f} |
| `dllm logits` on this Q4_K_M file vs on the F32 GGUF (the Q4_K_M distance) | median **{par['q4km_rel_rms_vs_f32_median']:.4f}**, mean {par['q4km_rel_rms_vs_f32_mean']:.4f}, max {par['q4km_rel_rms_vs_f32_max']:.4f}; argmax agrees on {par['q4km_argmax_agree_vs_f32'] * 100:.1f}% of rows |

Greedy sample (`dllm run --model {os.path.basename(a.model)} "Once upon a time" --max-tokens 32 --temperature 0`):

> Once upon a time{sample}

`tests/cli/tiny_model_test.cpp` checks through the binary that such greedy text is mostly words of the
corpus (`tools/train_tiny/corpus_words.txt`) and that the random-weight reference model fails that check.

## Licence

The training texts are in the public domain. The weights and tokenizer in this folder are released
under CC0 1.0 (public-domain dedication).

## Reproduce

`tools/train_tiny/run_all.sh` (pip install -r tools/train_tiny/requirements.txt first).
"""
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write(card)
    print("wrote", os.path.join(a.out, "README.md"), "and", png)


if __name__ == "__main__":
    main()
