#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz harnesses into fuzz/corpus/<harness>/seed-*.

Seeds are valid inputs that reach deep into each parser; libFuzzer mutates from there. Sources:
  gguf_fuzz       complete tiny LLaDA and Dream GGUFs written here byte by byte from the GGUF layout
                  (ggml/docs/gguf.md: header, key/values, tensor infos, aligned data), F32/F16/BF16
                  weights, a byte-level vocabulary, the reference models' chat templates; plus the first
                  2 KiB of each reference GGUF (header and first keys of real files)
  tokenizer_fuzz  the golden strings of ../shared/reference/tokenizer (text mode) and their ids (id mode)
  chat_fuzz       golden strings as user messages through each template, with and without a system
                  message and special parsing; the small vocabulary with each reference template
  hub_json_fuzz   model-info answers shaped like the hub's (and tests/hub/fake_hub.py's)
Input layouts are described at the top of each fuzz/<harness>.cpp. Run from anywhere:
  python3 fuzz/make_seeds.py [--shared DIR]
"""

import argparse
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- GGUF (little-endian) ------------------------------------------------------------------------

U32, I32, F32, BOOL, STR, ARR, U64 = 4, 5, 6, 7, 8, 9, 10


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gval(t, v):
    if t == U32:
        return struct.pack("<I", v)
    if t == I32:
        return struct.pack("<i", v)
    if t == F32:
        return struct.pack("<f", v)
    if t == BOOL:
        return struct.pack("<B", 1 if v else 0)
    if t == STR:
        return gstr(v)
    if t == U64:
        return struct.pack("<Q", v)
    raise ValueError(t)


def gguf(kvs, tensors, alignment=32):
    """kvs: [(key, type, value)] (ARRAY values as (ARR, (elem_type, [items]))); tensors: [(name, ne, ggml
    type, bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack("<I", t)
        if t == ARR:
            et, items = v
            out += struct.pack("<IQ", et, len(items))
            for it in items:
                out += gval(et, it)
        else:
            out += gval(t, v)
    offset = 0
    offsets = []
    for name, ne, gt, data in tensors:
        offsets.append(offset)
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", d) for d in ne)
        out += struct.pack("<IQ", gt, offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((-len(out)) % alignment)
    for (name, ne, gt, data), off in zip(tensors, offsets):
        out += data + b"\0" * ((-len(data)) % alignment)
    return bytes(out)


def byte_chars():
    """GPT-2 bytes_to_unicode (openai/gpt-2 src/encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def f32s(vals):
    return struct.pack("<%df" % len(vals), *vals)


def f16s(vals):
    return struct.pack("<%de" % len(vals), *vals)


def bf16s(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)


def weights(n, seed):
    x = seed * 2654435761 % 2**32
    out = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append((x / 2**31 - 0.5) * 0.2)
    return out


def tiny_model(arch, chat_template):
    bc = byte_chars()
    tokens = [bc[b] for b in range(256)] + ["Ġt", "he", "<0x41>", "<tool_call>"]
    types = [1] * 258 + [6, 4]  # a BYTE-type and a USER_DEFINED token
    if arch == "llada":
        specials = ["<|endoftext|>", "<|startoftext|>", "<|mdm_mask|>", "<|start_header_id|>",
                    "<|end_header_id|>", "<|eot_id|>"]
    else:
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
    first_special = len(tokens)
    tokens += specials
    types += [3] * len(specials)
    sid = {s: first_special + i for i, s in enumerate(specials)}
    n_embd, n_ff, n_vocab = 8, 16, len(tokens)
    a = arch + "."
    kvs = [
        ("general.architecture", STR, arch),
        (a + "block_count", U32, 1),
        (a + "context_length", U32, 64),
        (a + "embedding_length", U32, n_embd),
        (a + "feed_forward_length", U32, n_ff),
        (a + "attention.head_count", U32, 2),
        (a + "attention.head_count_kv", U32, 2 if arch == "llada" else 1),
        (a + "rope.freq_base", F32, 10000.0),
        (a + "attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("diffusion.shift_logits", BOOL, arch == "dream"),
        ("tokenizer.ggml.model", STR, "gpt2"),
        ("tokenizer.ggml.pre", STR, "bailingmoe" if arch == "llada" else "qwen2"),
        ("tokenizer.ggml.tokens", ARR, (STR, tokens)),
        ("tokenizer.ggml.token_type", ARR, (I32, types)),
        ("tokenizer.ggml.merges", ARR, (STR, ["Ġ t", "h e"])),
        ("tokenizer.ggml.eos_token_id", U32, sid["<|endoftext|>"]),
        ("tokenizer.ggml.mask_token_id", U32, sid["<|mdm_mask|>" if arch == "llada" else "<|mask|>"]),
        ("tokenizer.chat_template", STR, chat_template),
    ]
    if arch == "llada":
        kvs += [("tokenizer.ggml.bos_token_id", U32, sid["<|startoftext|>"]),
                ("tokenizer.ggml.add_bos_token", BOOL, True)]
    n_kv_heads = 2 if arch == "llada" else 1
    hd = n_embd // 2
    tensors = [("token_embd.weight", [n_embd, n_vocab], 1, f16s(weights(n_embd * n_vocab, 1))),
               ("output_norm.weight", [n_embd], 30 if arch == "dream" else 0,
                (bf16s if arch == "dream" else f32s)([1.0] * n_embd))]
    if arch == "dream":
        tensors.append(("output.weight", [n_embd, n_vocab], 1, f16s(weights(n_embd * n_vocab, 2))))
    p = "blk.0."
    tensors += [
        (p + "attn_norm.weight", [n_embd], 0, f32s([1.0] * n_embd)),
        (p + "attn_q.weight", [n_embd, n_embd], 0, f32s(weights(n_embd * n_embd, 3))),
        (p + "attn_k.weight", [n_embd, n_kv_heads * hd], 0, f32s(weights(n_embd * n_kv_heads * hd, 4))),
        (p + "attn_v.weight", [n_embd, n_kv_heads * hd], 1, f16s(weights(n_embd * n_kv_heads * hd, 5))),
        (p + "attn_output.weight", [n_embd, n_embd], 0, f32s(weights(n_embd * n_embd, 6))),
        (p + "ffn_norm.weight", [n_embd], 0, f32s([1.0] * n_embd)),
        (p + "ffn_gate.weight", [n_embd, n_ff], 0, f32s(weights(n_embd * n_ff, 7))),
        (p + "ffn_up.weight", [n_embd, n_ff], 30, bf16s(weights(n_embd * n_ff, 8))),
        (p + "ffn_down.weight", [n_ff, n_embd], 0, f32s(weights(n_ff * n_embd, 9))),
    ]
    if arch == "dream":
        tensors += [(p + "attn_q.bias", [n_embd], 0, f32s(weights(n_embd, 10))),
                    (p + "attn_k.bias", [n_kv_heads * hd], 0, f32s(weights(n_kv_heads * hd, 11))),
                    (p + "attn_v.bias", [n_kv_heads * hd], 0, f32s(weights(n_kv_heads * hd, 12)))]
    return gguf(kvs, tensors)


def read_string_key(path, wanted):
    """The STRING value of metadata key `wanted` in a GGUF file (scalars and arrays skipped)."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(path, "rb") as f:
        data = f.read(64 << 20)
    pos = 24
    n_kv = struct.unpack_from("<Q", data, 16)[0]

    def skip(t, pos):
        if t == STR:
            n = struct.unpack_from("<Q", data, pos)[0]
            return pos + 8 + n
        if t == ARR:
            et, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            for _ in range(n):
                pos = skip(et, pos)
            return pos
        return pos + sizes[t]

    for _ in range(n_kv):
        n = struct.unpack_from("<Q", data, pos)[0]
        key = data[pos + 8:pos + 8 + n].decode()
        pos += 8 + n
        t = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        if key == wanted and t == STR:
            n = struct.unpack_from("<Q", data, pos)[0]
            return data[pos + 8:pos + 8 + n].decode()
        pos = skip(t, pos)
    raise KeyError(wanted)


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.environ.get("DLLM_SHARED", os.path.join(HERE, "..", "..", "shared")))
    args = ap.parse_args()
    ref = os.path.join(args.shared, "reference")
    llada_t = read_string_key(os.path.join(ref, "tiny-llada-q4km.gguf"), "tokenizer.chat_template")
    dream_t = read_string_key(os.path.join(ref, "tiny-dream-q4km.gguf"), "tokenizer.chat_template")

    # gguf_fuzz
    write("gguf_fuzz", "tiny-llada.gguf", tiny_model("llada", llada_t))
    write("gguf_fuzz", "tiny-dream.gguf", tiny_model("dream", dream_t))
    for model in ("tiny-llada-q4km", "tiny-dream-q4km", "tiny-llada-moe-q4km", "tiny-rnd1-q4km"):
        with open(os.path.join(ref, model + ".gguf"), "rb") as f:
            write("gguf_fuzz", model + "-2k.gguf", f.read(2048))

    # tokenizer_fuzz / chat_fuzz from the golden strings (byte 0: tokenizer 0 = LLaDA, 1 = Dream)
    texts = []
    with open(os.path.join(ref, "tokenizer", "golden-tiny-llada-public.jsonl")) as f:
        goldens_llada = [json.loads(line) for line in f]
    with open(os.path.join(ref, "tokenizer", "golden-tiny-dream-public.jsonl")) as f:
        goldens_dream = [json.loads(line) for line in f]
    for sel, goldens in ((0, goldens_llada), (1, goldens_dream)):
        for g in goldens:
            text = g["text"].encode()
            texts.append(text)
            write("tokenizer_fuzz", "text-%d-%02d" % (sel, g["index"]), bytes([sel]) + text)
            # id mode: 3-byte little-endian ids
            ids = b"".join(struct.pack("<I", i)[:3] for i in g["ids_parse_special"])
            write("tokenizer_fuzz", "ids-%d-%02d" % (sel, g["index"]), bytes([0x80 | sel]) + ids)
    for i, text in enumerate(texts[:32]):
        for sel in (0, 1):
            for flags, tag in ((0, "plain"), (4, "system"), (16, "nospecial"), (8, "nochat")):
                body = (b"You are a helpful assistant.\xff" if flags & 4 else b"") + text
                write("chat_fuzz", "%d-%s-%02d" % (sel, tag, i), bytes([sel | flags]) + body)
    for tmpl, tag in ((llada_t, "llada"), (dream_t, "chatml"), ("", "none")):
        for flags in (3, 3 | 4, 3 | 0x20 | 0x40, 3 | 16):
            sysmsg = b"Be brief.\xff" if flags & 4 else b""
            write("chat_fuzz", "small-%s-%02x" % (tag, flags),
                  bytes([flags]) + tmpl.encode() + b"\xff" + sysmsg + b"  What is 2+2? \xe2\x80\x83")

    # hub_json_fuzz: model-info answers
    sha = "1" * 64
    sib = lambda name, lfs=True: dict(rfilename=name, size=1234, blobId="b" * 40,
                                     **({"lfs": {"sha256": sha, "size": 1234, "pointerSize": 134}} if lfs else {}))
    infos = {
        "q4km": {"id": "o/r", "sha": "a" * 40, "siblings": [sib("README.md", False), sib("m-Q8_0.gguf"),
                                                           sib("m-Q4_K_M.gguf")]},
        "split": {"sha": "b" * 40, "siblings": [sib("m-Q4_K_M-00001-of-00002.gguf"),
                                                 sib("m-Q4_K_M-00002-of-00002.gguf"), sib("x/m.F16.gguf")]},
        "noblobs": {"sha": "c" * 40, "siblings": [{"rfilename": "m.q8_0.gguf"}, {"rfilename": "../up.gguf"}]},
        "empty": {"sha": "d" * 40, "siblings": []},
    }
    for name, info in infos.items():
        write("hub_json_fuzz", name + ".json", json.dumps(info))


if __name__ == "__main__":
    main()
