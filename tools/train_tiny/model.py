"""The tiny LLaDA-architecture mask predictor (PyTorch), laid out exactly as llama.cpp's `llada` graph and
our runtime (src/cpu/forward.cpp) compute it, so its weights export to GGUF without any permutation:

  x = token_embd[ids]
  per layer: h = RMSNorm(x) * attn_norm;  q, k, v = h Wq, h Wk, h Wv   (no biases)
             RoPE on q, k in ggml NORM mode: pairs (2i, 2i+1) of each head rotated by pos * base^(-2i/hd)
             a = softmax(q k^T / sqrt(hd)) v per head, NO causal mask;  x += a Wo
             h = RMSNorm(x) * ffn_norm;  x += (silu(h Wgate) * (h Wup)) Wdown
  logits = (RMSNorm(x) * output_norm) Woutput          (separate output matrix, not tied)

Parameter names are the GGUF tensor names with '.' -> '_' (torch forbids dots in ParameterDict keys);
every matrix is stored (n_out, n_in), which is ggml's [n_in, n_out] with n_in contiguous.
"""

import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    n_vocab: int = 4096
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_ff: int = 768
    n_ctx: int = 256
    rope_base: float = 500000.0  # LLaDA-8B's rope_theta
    rms_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.n_embd // self.n_head

    def to_dict(self):
        return asdict(self)


def rope_cos_sin(n_pos, head_dim, base, device=None, dtype=torch.float32):
    """cos, sin of shape (n_pos, head_dim/2): angle[p, i] = p * base^(-2i/head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().to(dtype=dtype, device=device), ang.sin().to(dtype=dtype, device=device)


def rope_norm(x, cos, sin):
    """ggml NORM-mode RoPE on x (B, H, T, hd): rotates adjacent pairs (x[2i], x[2i+1])."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = cos[: x.shape[-2]], sin[: x.shape[-2]]
    y0 = x0 * c - x1 * s
    y1 = x0 * s + x1 * c
    return torch.stack((y0, y1), dim=-1).flatten(-2)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class TinyLlada(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        d, f, V = cfg.n_embd, cfg.n_ff, cfg.n_vocab
        p = {"token_embd_weight": nn.Parameter(torch.randn(V, d) * 0.02),
             "output_norm_weight": nn.Parameter(torch.ones(d)),
             "output_weight": nn.Parameter(torch.randn(V, d) * 0.02)}
        std_out = 0.02 / math.sqrt(2 * cfg.n_layer)  # GPT-2 style scaled init of residual projections
        # q and k start at 1/sqrt(d) (attention logits ~ N(0, 1)) rather than 0.02: with 0.02 the
        # attention stays uniform for hundreds of steps (q.k is a product of two small matrices) and the
        # model sits at the unigram solution; the first 400-step run here did exactly that.
        std_qk = 1 / math.sqrt(d)
        for i in range(cfg.n_layer):
            b = f"blk_{i}_"
            p[b + "attn_norm_weight"] = nn.Parameter(torch.ones(d))
            p[b + "attn_q_weight"] = nn.Parameter(torch.randn(d, d) * std_qk)
            p[b + "attn_k_weight"] = nn.Parameter(torch.randn(d, d) * std_qk)
            p[b + "attn_v_weight"] = nn.Parameter(torch.randn(d, d) * 0.02)
            p[b + "attn_output_weight"] = nn.Parameter(torch.randn(d, d) * std_out)
            p[b + "ffn_norm_weight"] = nn.Parameter(torch.ones(d))
            p[b + "ffn_gate_weight"] = nn.Parameter(torch.randn(f, d) * 0.02)
            p[b + "ffn_up_weight"] = nn.Parameter(torch.randn(f, d) * 0.02)
            p[b + "ffn_down_weight"] = nn.Parameter(torch.randn(d, f) * std_out)
        self.p = nn.ParameterDict(p)
        cos, sin = rope_cos_sin(cfg.n_ctx, cfg.head_dim, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def hidden(self, ids):
        """Final normalized hidden states (B, T, d) for token ids (B, T)."""
        cfg, p = self.cfg, self.p
        B, T = ids.shape
        H, hd = cfg.n_head, cfg.head_dim
        x = p["token_embd_weight"][ids]
        for i in range(cfg.n_layer):
            b = f"blk_{i}_"
            h = rmsnorm(x, p[b + "attn_norm_weight"], cfg.rms_eps)
            q = (h @ p[b + "attn_q_weight"].T).view(B, T, H, hd).transpose(1, 2)
            k = (h @ p[b + "attn_k_weight"].T).view(B, T, H, hd).transpose(1, 2)
            v = (h @ p[b + "attn_v_weight"].T).view(B, T, H, hd).transpose(1, 2)
            q, k = rope_norm(q, self.cos, self.sin), rope_norm(k, self.cos, self.sin)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=False)
            x = x + a.transpose(1, 2).reshape(B, T, H * hd) @ p[b + "attn_output_weight"].T
            h = rmsnorm(x, p[b + "ffn_norm_weight"], cfg.rms_eps)
            g = F.silu(h @ p[b + "ffn_gate_weight"].T) * (h @ p[b + "ffn_up_weight"].T)
            x = x + g @ p[b + "ffn_down_weight"].T
        return rmsnorm(x, self.p["output_norm_weight"], cfg.rms_eps)

    def logits_of(self, h):
        return h @ self.p["output_weight"].T

    def forward(self, ids):
        return self.logits_of(self.hidden(ids))


def gguf_name(param_name: str) -> str:
    """'blk_0_attn_q_weight' -> 'blk.0.attn_q.weight', 'token_embd_weight' -> 'token_embd.weight'."""
    if param_name.startswith("blk_"):
        _, i, rest = param_name.split("_", 2)
        return f"blk.{i}.{rest[: -len('_weight')]}.weight"
    return param_name[: -len("_weight")] + ".weight"
