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
