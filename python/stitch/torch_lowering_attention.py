"""Fused attention as Stitch's `attention` op (docs/torch.md, Attention): lowered only
where the backend's `stitch_attention` option asks for it (ATTENTION_OPS); otherwise
PyTorch's fused kernel runs it."""

import math

import torch

from .torch_lowering import cast, constant, lowers

aten = torch.ops.aten

ATTENTION_OPS = (aten.scaled_dot_product_attention.default,)


def _refuse_attention(node):
    dropout = node.args[4] if len(node.args) > 4 else node.kwargs.get("dropout_p", 0.0)
    if dropout != 0.0:
        return "attention with dropout"
    if node.kwargs.get("enable_gqa", False) or (len(node.args) > 7 and node.args[7]):
        return "attention over grouped key/value heads (enable_gqa)"
    dtype = node.meta["val"].dtype
    return None if dtype in (torch.float32, torch.float64) else f"{dtype} attention"


@lowers(aten.scaled_dot_product_attention.default, refuse=_refuse_attention)
def _attention(g, out, base, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
               enable_gqa=False):
    """softmax(q kᵀ scale + mask) v: a float mask is added; a bool one keeps where true."""
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    operands = [q.name, k.name, v.name]
    if attn_mask is not None:
        if attn_mask.dtype is torch.bool:
            zero, minus_inf = constant(g, 0.0, q.dtype), constant(g, float("-inf"), q.dtype)
            attn_mask = g.op(base + "_bias", f"select({attn_mask.name}, {zero.name}, {minus_inf.name})", q.dtype,
                             attn_mask.shape)
        operands.append(cast(g, attn_mask, q.dtype).name)
    causal = "true" if is_causal else "false"
    return g.op(base, f"attention({', '.join(operands)}, scale={float(scale)!r}, causal={causal})", q.dtype,
                out.shape)
