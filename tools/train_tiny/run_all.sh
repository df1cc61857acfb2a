#!/usr/bin/env bash
# Rebuilds the demo model from scratch: corpus -> tokenizer -> training -> GGUF export -> checks -> card.
#   tools/train_tiny/run_all.sh GUTENBERG_CLONE DLLM_BINARY
# GUTENBERG_CLONE: a git clone of the public GitHub repository rcdm-uga/Gutenberg_Text (any checkout
# holding commit a0b16d35a9851168ce9ac649851c17b7ab08d48e). DLLM_BINARY: build/bin/dllm.
# Training resumes from runs/tiny/ckpt.pt when it exists. Python packages: requirements.txt.
set -euo pipefail
cd "$(dirname "$0")"
repo=$1
dllm=$(realpath "$2")
model=../../models/tiny-llada-fairytales-q4km.gguf
python corpus.py --repo "$repo" --out data
cp tokenizer.json data/tokenizer.json   # the committed tokenizer (tok.py --train data/train.txt makes a new one)
# Segment 1: 4000 steps of BOS + 63 tokens; segment 2: 800 more at the full 256-token context (same
# tokens per step) so every RoPE position a canvas uses is trained. --resume makes each segment restartable.
nice -n 5 python train.py --data data --out runs/tiny --steps 4000 --batch 64 --seq 64 --warmup 50 \
  --lr 2e-3 --ckpt-every 100 --stop-at 4000 --resume
nice -n 5 python train.py --data data --out runs/tiny --steps 4800 --batch 16 --seq 256 --warmup 50 \
  --lr 2e-3 --ckpt-every 100 --resume
python export.py --ckpt runs/tiny/ckpt.pt --tokenizer data/tokenizer.json \
  --f32 runs/tiny/tiny-llada-fairytales-f32.gguf --q4km "$model"
python parity.py --ckpt runs/tiny/ckpt.pt --f32 runs/tiny/tiny-llada-fairytales-f32.gguf --q4km "$model" \
  --dllm "$dllm" --json runs/tiny/parity.json
python tokcheck.py --gguf "$model" --dllm "$dllm" --json runs/tiny/tokcheck.json
python evaluate.py --ckpt runs/tiny/ckpt.pt --gguf "$model" --dllm "$dllm" --json runs/tiny/eval.json
python wordlist.py --train data/train.txt --out corpus_words.txt
python make_card.py --run runs/tiny --model "$model" --dllm "$dllm" --out ../../models
