"""Blocks built from torch.nn that the torch.compile backend's tests
(test_torch_backend.py) and benchmark (bench/python/torch_blocks.py) both compile."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT2Block(nn.Module):
    """GPT-2's block: pre-LN causal self-attention and a tanh-GELU MLP."""

    def __init__(self, d=64, heads=4, context=16):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads
        self.register_buffer("bias", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class BertLayer(nn.Module):
    """BERT's encoder layer: post-LN attention with a padding mask, erf-GELU FFN."""

    def __init__(self, d=64, heads=4, ffn=256):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln_attn, self.ln_out = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.heads = heads

    def forward(self, x, mask):
        B, T, C = x.shape

        def heads(t):
            return t.view(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(C // self.heads)
        scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
        ctx = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(B, T, C)
        x = self.ln_attn(x + self.o(ctx))
        return self.ln_out(x + self.down(F.gelu(self.up(x))))


class LlamaBlock(nn.Module):
    """A Llama-style decoder block: pre-RMSNorm, rotary position embedding on the
    queries and keys (the halves of each head rotated), grouped-query causal attention
    (fewer key/value heads than query heads, each shared by a group), and a SwiGLU MLP
    (silu of one projection times another); no biases."""

    def __init__(self, d=64, heads=4, kv_heads=2, hidden=172, context=16):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, d // heads
        self.attn_norm, self.mlp_norm = nn.RMSNorm(d, eps=1e-6), nn.RMSNorm(d, eps=1e-6)
        self.wq = nn.Linear(d, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, d, bias=False)
        self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)
        frequencies = 10000.0 ** (-torch.arange(0, self.head_dim, 2).float() / self.head_dim)
        angles = torch.outer(torch.arange(context).float(), frequencies)  # [context, head_dim / 2]
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())
        self.register_buffer("causal", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def rotate(self, t):
        """t: [B, H, T, head_dim]; each position's two halves rotated by its angles."""
        half = self.head_dim // 2
        a, b = t[..., :half], t[..., half:]
        cos, sin = self.cos[: t.shape[2]], self.sin[: t.shape[2]]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self.rotate(q), self.rotate(k)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        att = att.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(-1)
        x = x + self.wo((att @ v).transpose(1, 2).reshape(B, T, C))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))
