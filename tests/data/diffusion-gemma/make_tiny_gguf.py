#!/usr/bin/env python3
"""Write the tiny random DiffusionGemma (`diffusion-gemma`) and Gemma-4 MoE (`gemma4`) F32 GGUF files.

The keys, tensor names, shapes and tokenizer layout follow what llama.cpp PR #24423's converter writes
(unslothai/llama.cpp 73d820aff: conversion/diffusion_gemma.py `DiffusionGemmaModel` on top of
conversion/gemma.py `Gemma4Model` / `Gemma3Model` and conversion/base.py `TextModel`); see README.md in
this folder for the list and for the commands that quantize the result and record the reference data.

Only gguf-py is taken from that tree (`--gguf-py`, the folder that holds the `gguf` package); the
tokenizer goes through gguf-py's own `LlamaHfVocab` + `SpecialVocab`, as `Gemma4Model.set_vocab` does,
which needs the `tokenizers` and `transformers` packages (no network, no torch).

Weights: one numpy PCG64 stream per tensor, seeded with (seed, sha256(tensor name)), so the two files draw
the same backbone from the same seed; their defaults differ only in the scale of token_embd and of the two
residual-branch output norms (README.md, "Conditioning"). The output is byte-identical on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

# --- shapes (scaled down from DiffusionGemma 26B-A4B: 30 layers, 2816 hidden, 16 heads, 256/512 head dims,
#     8/2 KV heads, 128 experts top-8 of 704, dense 2112, window 1024, canvas 256, vocab 262144) ---------------
N_VOCAB = 512
N_EMBD = 256
SWA_PATTERN = [True, False, True]  # True = sliding layer; False = global (full) layer
N_LAYER = len(SWA_PATTERN)
N_HEAD = 8
HEAD_DIM_SWA = 32  # head_dim         -> attention.key_length_swa / value_length_swa
HEAD_DIM_FULL = 64  # global_head_dim  -> attention.key_length / value_length
N_KV_SWA = 4  # num_key_value_heads
N_KV_FULL = 2  # num_global_key_value_heads
N_FF = 320  # intermediate_size (dense MLP = shared expert; also the self-conditioning MLP)
N_EXPERT = 8
N_EXPERT_USED = 2
N_FF_EXP = 128  # moe_intermediate_size
SLIDING_WINDOW = 8
ROPE_THETA_FULL = 1_000_000.0
ROPE_THETA_SWA = 10_000.0
PARTIAL_ROTARY_FULL = 0.25  # rope_parameters.full_attention.partial_rotary_factor ("proportional")
RMS_EPS = 1e-6
SOFTCAP = 30.0
N_CTX = 4096
CANVAS_LENGTH = 32
# sampler defaults written as diffusion.eb_* (deliberately not the runtime's built-in 48/0.4/0.8/0.1/1/0.005,
# so a test can tell that the file's values are the ones used)
EB = dict(max_steps=16, t_min=0.45, t_max=0.9, entropy_bound=0.5, stability=1, confidence=0.05)
# per-layer output scalars: decoder (canvas rows, layer_output_scale) and encoder (prompt rows,
# enc_layer_output_scale); all different from 1 and from each other
# (the last layer's scalar cannot show in the logits: the final RMSNorm divides it out)
DEC_SCALE = [1.30, 0.55, 0.70]
ENC_SCALE = [0.60, 1.40, 1.25]

# --- tokenizer: Gemma's special tokens first (mask id 4 as in the real vocabulary), then the 256 byte-fallback
#     tokens <0x00>..<0xFF>, then BPE pieces learned from CORPUS below -------------------------------------------
SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>",
            "<|turn>", "<turn|>", "<|channel>", "<channel|>",
            "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", '<|"|>']
# marked special in tokenizer_config (-> CONTROL); Gemma4Model.set_vocab then forces its `visible_tokens`
# (channel / tool / quote markers) to USER_DEFINED
EXTRA_SPECIAL = ["<|turn>", "<turn|>"]
VISIBLE_TOKENS = {"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                  "<tool_response|>", '<|"|>'}
CORPUS = """\
What is 2+2? The answer is 4.
Write a short poem about the sea and the sky.
Tell me a story about a small robot who learns to paint.
The quick brown fox jumps over the lazy dog.
Once upon a time there was a little cat that lived in a house by the river.
Explain how a diffusion model writes text: it starts from noise and refines every token at once.
Hello world! How are you today? I am fine, thank you.
List three colors: red, green and blue.
def add(a, b):
    return a + b
The model thinks, then it answers the question in a clear and friendly way.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 2026.
Please summarize the following text in one sentence.
"""

# Gemma-4 turn markers, rendered like google's gemma-4 "-it" template does for plain-text messages without
# tools or thinking (system turn first, assistant -> model, trimmed contents, and the generation prompt that
# opens a model turn with an empty thought channel). Written for these test files; it is not Google's file.
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- set loop_messages = messages -%}"
    "{%- if messages and messages[0]['role'] in ['system', 'developer'] -%}"
    "{{- '<|turn>system\\n' + (messages[0]['content'] | trim) + '<turn|>\\n' -}}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{- '<|turn>' + role + '\\n' + (message['content'] | trim) + '<turn|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|turn>model\\n<|channel>thought\\n<channel|>' -}}"
    "{%- endif -%}"
)


def rng_for(seed: int, name: str) -> np.random.Generator:
    digest = hashlib.sha256(name.encode()).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *words])))


def normal(seed: int, name: str, shape: tuple[int, ...], mean: float, std: float) -> np.ndarray:
    return (mean + std * rng_for(seed, name).standard_normal(shape)).astype(np.float32)


def uniform(seed: int, name: str, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    return rng_for(seed, name).uniform(lo, hi, shape).astype(np.float32)


def build_tokenizer_dir(out_dir: Path) -> None:
    """Write tokenizer.json / tokenizer_config.json / chat_template.jinja in the layout of Gemma-4's
    Hugging Face tokenizer: BPE over raw UTF-8 with byte fallback, spaces normalised to U+2581."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    n_learned = N_VOCAB - len(SPECIALS) - 256
    trainer_tok = Tokenizer(models.BPE(byte_fallback=True))
    trainer_tok.normalizer = normalizers.Replace(" ", "\u2581")
    # training only: split before each U+2581 so pieces look like Gemma's ("\u2581word"); the saved
    # tokenizer has no pre-tokenizer (llama.cpp's gemma4 pre-type runs BPE over whole lines), which gives
    # the same ids because no learned merge spans a word boundary
    trainer_tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")
    trainer = trainers.BpeTrainer(vocab_size=n_learned, show_progress=False, special_tokens=[])
    trainer_tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer)
    learned = json.loads(trainer_tok.to_str())["model"]
    pieces = sorted(learned["vocab"].items(), key=lambda kv: kv[1])
    if len(pieces) != n_learned:
        raise SystemExit(f"ERROR: BPE training gave {len(pieces)} pieces, expected {n_learned}; edit CORPUS")

    vocab: dict[str, int] = {}
    for tok in SPECIALS:
        vocab[tok] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in pieces:
        if piece in vocab:
            raise SystemExit(f"ERROR: learned piece {piece!r} collides with a reserved token")
        vocab[piece] = len(vocab)
    assert len(vocab) == N_VOCAB

    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                                                    for m in learned["merges"]],
                               unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    tok.save(str(out_dir / "tokenizer.json"))

    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
        "mask_token": "<mask>", "additional_special_tokens": EXTRA_SPECIAL,
        "add_bos_token": True, "add_eos_token": False, "model_max_length": N_CTX,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (out_dir / "chat_template.jinja").write_text(CHAT_TEMPLATE)


def add_vocab(gguf, writer, tok_dir: Path) -> None:
    """Gemma4Model.set_vocab (conversion/gemma.py), with this folder's tokenizer."""
    vocab = gguf.LlamaHfVocab(tok_dir)
    tokens, scores, toktypes = [], [], []
    for text, score, toktype in vocab.all_tokens():
        tokens.append(text)
        scores.append(score)
        toktypes.append(gguf.TokenType.USER_DEFINED if text.decode() in VISIBLE_TOKENS else toktype)
    assert len(tokens) == vocab.vocab_size == N_VOCAB
    writer.add_tokenizer_model("gemma4")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(toktypes)
    special_vocab = gguf.SpecialVocab(tok_dir, load_merges=True)
    special_vocab.add_to_gguf(writer)
    writer.add_add_space_prefix(False)
    writer.add_add_bos_token(True)


def add_hparams(gguf, w, diffusion: bool) -> None:
    """TextModel + Gemma3Model + Gemma4Model (+ DiffusionGemmaModel) set_gguf_parameters, in their order."""
    # TextModel.set_gguf_parameters
    w.add_block_count(N_LAYER)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV_SWA)
    w.add_rope_freq_base(ROPE_THETA_FULL)
    w.add_rope_freq_base_swa(ROPE_THETA_SWA)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(N_EXPERT_USED)
    w.add_key_length(HEAD_DIM_SWA)
    w.add_value_length(HEAD_DIM_SWA)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Gemma3Model.set_gguf_parameters
    w.add_final_logit_softcapping(SOFTCAP)
    w.add_sliding_window(SLIDING_WINDOW)
    # Gemma4Model.set_gguf_parameters
    w.add_shared_kv_layers(0)
    w.add_embedding_length_per_layer_input(0)
    w.add_sliding_window_pattern(SWA_PATTERN)
    w.add_key_length(HEAD_DIM_FULL)
    w.add_value_length(HEAD_DIM_FULL)
    w.add_key_length_swa(HEAD_DIM_SWA)
    w.add_value_length_swa(HEAD_DIM_SWA)
    w.add_expert_feed_forward_length(N_FF_EXP)
    w.add_head_count_kv([N_KV_SWA if swa else N_KV_FULL for swa in SWA_PATTERN])
    w.add_rope_dimension_count(HEAD_DIM_FULL)
    w.add_rope_dimension_count_swa(HEAD_DIM_SWA)
    if diffusion:  # DiffusionGemmaModel.set_gguf_parameters
        w.add_causal_attention(False)
        w.add_diffusion_canvas_length(CANVAS_LENGTH)
        w.add_diffusion_eb_max_steps(EB["max_steps"])
        w.add_diffusion_eb_t_min(EB["t_min"])
        w.add_diffusion_eb_t_max(EB["t_max"])
        w.add_diffusion_eb_entropy_bound(EB["entropy_bound"])
        w.add_diffusion_eb_stability_threshold(EB["stability"])
        w.add_diffusion_eb_confidence_threshold(EB["confidence"])


def tensors(seed: int, embd_std: float, post_norm_mean: float, router_std: float, q_norm_mean: float,
            diffusion: bool) -> list[tuple[str, np.ndarray]]:
    """(GGUF name, array in numpy order = reversed ggml ne) for every tensor the loader reads."""
    out: list[tuple[str, np.ndarray]] = []

    def add(name, arr):
        out.append((name, arr))

    def norm(name, n):  # raw multiplicative RMSNorm weight (Gemma4Model.norm_shift is 0)
        add(name, normal(seed, name, (n,), 1.0, 0.1))

    def mat(name, n_out, n_in, gain=1.0):  # ggml ne {n_in, n_out}
        add(name, normal(seed, name, (n_out, n_in), 0.0, gain / np.sqrt(n_in)))

    add("token_embd.weight", normal(seed, "token_embd.weight", (N_VOCAB, N_EMBD), 0.0, embd_std))
    # Gemma4Model.generate_extra_tensors: proportional RoPE on global layers = NEOX over the whole head with
    # factor 1e30 (no rotation) on the pairs past partial_rotary_factor
    n_rot_pairs = int(HEAD_DIM_FULL * PARTIAL_ROTARY_FULL / 2)
    add("rope_freqs.weight", np.array([1.0] * n_rot_pairs + [1e30] * (HEAD_DIM_FULL // 2 - n_rot_pairs),
                                      dtype=np.float32))
    for il, swa in enumerate(SWA_PATTERN):
        p = f"blk.{il}."
        hd = HEAD_DIM_SWA if swa else HEAD_DIM_FULL
        n_kv = N_KV_SWA if swa else N_KV_FULL
        norm(p + "attn_norm.weight", N_EMBD)
        mat(p + "attn_q.weight", N_HEAD * hd, N_EMBD)
        mat(p + "attn_k.weight", n_kv * hd, N_EMBD)
        if swa:  # global layers have no v_proj: llama.cpp reuses K (before k-norm and RoPE) as V
            mat(p + "attn_v.weight", n_kv * hd, N_EMBD)
        mat(p + "attn_output.weight", N_EMBD, N_HEAD * hd)
        # small q-norm weights keep the scale-1.0 attention logits moderate (std about 1); larger ones make the
        # random model amplify rounding noise (see README, "Conditioning")
        add(p + "attn_q_norm.weight", normal(seed, p + "attn_q_norm.weight", (hd,), q_norm_mean, 0.05))
        norm(p + "attn_k_norm.weight", hd)
        # the two residual-branch output norms are larger than 1 so the layers' updates outweigh the token's
        # own embedding; otherwise the tied LM head mostly predicts the input token back
        add(p + "post_attention_norm.weight",
            normal(seed, p + "post_attention_norm.weight", (N_EMBD,), post_norm_mean, 0.1 * post_norm_mean))
        add(p + "layer_output_scale.weight", np.array([DEC_SCALE[il]], dtype=np.float32))
        if diffusion:
            add(p + "enc_layer_output_scale.weight", np.array([ENC_SCALE[il]], dtype=np.float32))
        # dense MLP (the shared expert)
        norm(p + "ffn_norm.weight", N_EMBD)
        mat(p + "ffn_gate.weight", N_FF, N_EMBD)
        mat(p + "ffn_up.weight", N_FF, N_EMBD)
        mat(p + "ffn_down.weight", N_EMBD, N_FF)
        add(p + "post_ffw_norm.weight",
            normal(seed, p + "post_ffw_norm.weight", (N_EMBD,), post_norm_mean, 0.1 * post_norm_mean))
        # router: logits = W . (rms_norm(x) / sqrt(n_embd) * scale), so W's std is the router logits' std;
        # a wide spread keeps top-2 choices away from near-ties
        add(p + "ffn_gate_inp.weight", normal(seed, p + "ffn_gate_inp.weight", (N_EXPERT, N_EMBD), 0.0, router_std))
        add(p + "ffn_gate_inp.scale", normal(seed, p + "ffn_gate_inp.scale", (N_EMBD,), 1.0, 0.1))
        norm(p + "pre_ffw_norm_2.weight", N_EMBD)
        norm(p + "post_ffw_norm_1.weight", N_EMBD)
        norm(p + "post_ffw_norm_2.weight", N_EMBD)
        # experts: fused gate|up (rows 0..n_ff_exp-1 = gate), ne {n_embd, 2*n_ff_exp, n_expert}
        add(p + "ffn_gate_up_exps.weight",
            normal(seed, p + "ffn_gate_up_exps.weight", (N_EXPERT, 2 * N_FF_EXP, N_EMBD), 0.0, 1 / np.sqrt(N_EMBD)))
        add(p + "ffn_down_exps.weight",
            normal(seed, p + "ffn_down_exps.weight", (N_EXPERT, N_EMBD, N_FF_EXP), 0.0, 1 / np.sqrt(N_FF_EXP)))
        # router.per_expert_scale -> ffn_down_exps.scale (Gemma4Model.modify_tensors)
        add(p + "ffn_down_exps.scale", uniform(seed, p + "ffn_down_exps.scale", (N_EXPERT,), 0.5, 1.5))
    norm("output_norm.weight", N_EMBD)
    if diffusion:  # model.decoder.self_conditioning.{pre_norm,gate_proj,up_proj,down_proj}
        norm("self_cond_pre_norm.weight", N_EMBD)
        mat("self_cond_gate.weight", N_FF, N_EMBD)
        mat("self_cond_up.weight", N_FF, N_EMBD)
        mat("self_cond_down.weight", N_EMBD, N_FF, gain=3.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf-py", required=True, type=Path, help="folder holding the fork's gguf package")
    ap.add_argument("--arch", required=True, choices=["diffusion-gemma", "gemma4"])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--embd-std", type=float, default=None,
                    help="std of token_embd, the tied LM head (default 0.5 diffusion-gemma, 0.2 gemma4)")
    ap.add_argument("--post-norm-mean", type=float, default=None,
                    help="mean of post_attention_norm / post_ffw_norm weights (default 2 diffusion-gemma, 8 gemma4:"
                         " prompt rows are not normalised, so the causal file needs larger layer updates)")
    ap.add_argument("--router-std", type=float, default=6.0, help="std of ffn_gate_inp (router logits std)")
    ap.add_argument("--q-norm-mean", type=float, default=0.1, help="mean of attn_q_norm weights")
    ap.add_argument("--name", default=None)
    ap.add_argument("--tokenizer-dir", type=Path, default=None,
                    help="also keep the Hugging Face tokenizer files written here")
    args = ap.parse_args()

    sys.path.insert(0, str(args.gguf_py))
    import gguf  # noqa: E402  (the fork's gguf-py)

    diffusion = args.arch == "diffusion-gemma"
    embd_std = args.embd_std if args.embd_std is not None else (0.5 if diffusion else 0.2)
    post_norm_mean = args.post_norm_mean if args.post_norm_mean is not None else (2.0 if diffusion else 8.0)
    w = gguf.GGUFWriter(str(args.out), args.arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(args.name or f"tiny-{args.arch}")
    add_hparams(gguf, w, diffusion)
    with tempfile.TemporaryDirectory() as tmp:
        tok_dir = args.tokenizer_dir or Path(tmp)
        tok_dir.mkdir(parents=True, exist_ok=True)
        build_tokenizer_dir(tok_dir)
        add_vocab(gguf, w, tok_dir)
    for name, arr in tensors(args.seed, embd_std, post_norm_mean, args.router_std, args.q_norm_mean, diffusion):
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
