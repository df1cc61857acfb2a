"""Exports a trained checkpoint to GGUF (arch `llada`), F32 and Q4_K_M, with the tokenizer.

Keys and tensor names are those of ../shared/reference/tiny-llada-q4km.gguf (llama.cpp's LLaDA
converter output), except: tokenizer.ggml.pre = gpt2 (our tokenizer.json splits with the GPT-2 regex),
no tokenizer.chat_template (so `dllm run` feeds raw text), context_length = the training length.
The model's RoPE already rotates adjacent pairs (ggml NORM mode), so q/k are written unpermuted.

Q4_K_M mix, as llama.cpp's quantizer picks it for LLaDA: output.weight Q6_K; attn_v and ffn_down Q6_K in
the layers where use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (layers 2 and 3 of 4);
every other matrix Q4_K (token_embd too); norms F32. Every quantized tensor is checked: this module's
dequantization must equal gguf.quants.dequantize of the written bytes exactly.

Usage: python export.py --ckpt runs/tiny/ckpt.pt --tokenizer data/tokenizer.json \
         --f32 runs/tiny/tiny-llada-f32.gguf --q4km ../../models/<name>.gguf
"""

import argparse
import json

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as QT

import kquants
from model import gguf_name
from tok import BOS_ID, EOS_ID, MASK_ID, EOT_ID, SPECIALS, N_LEARNED

NAME = "dllm-tiny-llada-fairytales"


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def q4km_type(name, n_layer):
    if name == "output.weight":
        return QT.Q6_K
    if name.endswith("_norm.weight"):
        return QT.F32
    if name.startswith("blk.") and (".attn_v." in name or ".ffn_down." in name):
        return QT.Q6_K if use_more_bits(int(name.split(".")[1]), n_layer) else QT.Q4_K
    return QT.Q4_K


def tokenizer_arrays(path):
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = {**tj["model"]["vocab"], **{t["content"]: t["id"] for t in tj["added_tokens"]}}
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    assert all(t is not None for t in tokens) and len(tokens) == N_LEARNED + len(SPECIALS)
    types = [1] * N_LEARNED + [3] * len(SPECIALS)  # NORMAL, CONTROL
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return tokens, types, merges


def write(path, state, cfg, tok_path, quantized):
    w = gguf.GGUFWriter(path, "llada")
    A = "llada"
    w.add_string("general.type", "model")
    w.add_string("general.name", NAME)
    w.add_uint32(f"{A}.block_count", cfg["n_layer"])
    w.add_uint32(f"{A}.context_length", cfg["n_ctx"])
    w.add_uint32(f"{A}.embedding_length", cfg["n_embd"])
    w.add_uint32(f"{A}.feed_forward_length", cfg["n_ff"])
    w.add_uint32(f"{A}.attention.head_count", cfg["n_head"])
    w.add_uint32(f"{A}.attention.head_count_kv", cfg["n_head"])
    w.add_float32(f"{A}.rope.freq_base", cfg["rope_base"])
    w.add_float32(f"{A}.attention.layer_norm_rms_epsilon", cfg["rms_eps"])
    w.add_bool(f"{A}.attention.causal", False)
    w.add_uint32(f"{A}.vocab_size", cfg["n_vocab"])
    w.add_uint32(f"{A}.rope.dimension_count", cfg["n_embd"] // cfg["n_head"])
    w.add_bool("diffusion.shift_logits", False)
    tokens, types, merges = tokenizer_arrays(tok_path)
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "gpt2")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_uint32("tokenizer.ggml.bos_token_id", BOS_ID)
    w.add_uint32("tokenizer.ggml.eos_token_id", EOS_ID)
    w.add_uint32("tokenizer.ggml.padding_token_id", EOS_ID)
    w.add_uint32("tokenizer.ggml.mask_token_id", MASK_ID)
    w.add_uint32("tokenizer.ggml.eot_token_id", EOT_ID)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_uint32("general.quantization_version", 2)
    w.add_uint32("general.file_type", 15 if quantized else 0)  # MOSTLY_Q4_K_M / ALL_F32
    n_layer = cfg["n_layer"]
    # Same tensor order as the reference file: output, output_norm, token_embd, then per layer.
    order = ["output.weight", "output_norm.weight", "token_embd.weight"]
    for i in range(n_layer):
        order += [f"blk.{i}.{n}.weight" for n in ("attn_k", "attn_norm", "attn_output", "attn_q", "attn_v",
                                                   "ffn_down", "ffn_gate", "ffn_norm", "ffn_up")]
    tensors = {gguf_name(k[2:]): v.detach().float().numpy() for k, v in state.items() if k.startswith("p.")}
    assert sorted(tensors) == sorted(order), sorted(set(tensors) ^ set(order))
    stats = {}
    for name in order:
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        t = q4km_type(name, n_layer) if quantized else QT.F32
        if t == QT.F32:
            w.add_tensor(name, a)
            continue
        blocks, deq = (kquants.quantize_q4_K if t == QT.Q4_K else kquants.quantize_q6_K)(a)
        ref = gguf.quants.dequantize(blocks, t)
        if not np.array_equal(ref, deq):
            raise SystemExit(f"{name}: own dequantization differs from gguf.quants.dequantize")
        w.add_tensor(name, blocks, raw_dtype=t)
        stats[name] = (t.name, float(np.sqrt(((deq - a) ** 2).mean() / (a ** 2).mean())))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--f32")
    ap.add_argument("--q4km")
    a = ap.parse_args()
    ck = torch.load(a.ckpt, map_location="cpu")
    if a.f32:
        write(a.f32, ck["model"], ck["config"], a.tokenizer, quantized=False)
        print("wrote", a.f32)
    if a.q4km:
        stats = write(a.q4km, ck["model"], ck["config"], a.tokenizer, quantized=True)
        for n, (t, e) in stats.items():
            print(f"  {n:28s} {t:5s} relative RMS quantization error {e:.4f}")
        print("wrote", a.q4km)


if __name__ == "__main__":
    main()
