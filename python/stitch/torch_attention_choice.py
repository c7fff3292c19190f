"""Whether attention written out runs as PyTorch's fused kernel or stays written out:
measured, per problem (docs/torch.md, Attention in training).

Fused, a graph runs PyTorch's flash attention forward (and in training its
backward). Written out, it runs two matrix products around the softmax forward (in
training four more and the softmax's backward), Stitch's partitions taking the
softmax with the scale and the mask. On this project's CPUs neither wins everywhere:
the fused kernels were 2-2.6x faster at 512 tokens and slower than the products at 128
tokens with 32-wide heads (a Llama-style block's training step 7% slower fused). So
the backend times both on the attention's own shapes, once per process (alternating,
medians): the fused forward (and backward) against the products and PyTorch's softmax
kernels (single passes over the scores, as Stitch's partitions are). The fused form is
chosen where it takes at most MARGIN of the written-out form's time.
"""

import torch
import torch.nn.functional as F

from .torch_products import alternating_medians, measured_choice

# The fused kernels must take at most this fraction of the written-out form's time
# (medians) to be chosen: within it the two are level and the form written stays.
MARGIN = 0.97
_ROUNDS = 5          # timed calls of each, alternating
_BUDGET_S = 1.0      # a problem's measurement stops early past this many seconds

# (q, k, v shapes, dtype, mask shape and dtype or None, training) -> whether fused was faster
_choices = {}
# The measurements made, for tests and the docs: key -> (written-out seconds, fused seconds)
measurements = {}


def _hint(d):
    return int(d.node.hint) if isinstance(d, torch.SymInt) else int(d)


def problem(q, k, v, mask, training):
    """The key of an attention: its operands' shapes and dtype, its mask's (fake
    tensors, as the graphs hold them; sizes as the example's), and whether a backward
    runs too."""
    def shape(t):
        return tuple(_hint(d) for d in t.shape)

    masked = None if mask is None else (shape(mask), mask.dtype)
    return (shape(q), shape(k), shape(v), q.dtype, masked, training)


def _operands(key):
    q_shape, k_shape, v_shape, dtype, masked, _ = key
    q, k, v = (torch.randn(s, dtype=dtype, requires_grad=True) for s in (q_shape, k_shape, v_shape))
    mask = None
    if masked is not None:
        m_shape, m_dtype = masked
        # A causal-like boolean mask (no row empty), or a float bias of zeros.
        mask = (torch.ones(m_shape[-2:], dtype=torch.bool).tril().expand(m_shape).contiguous()
                if m_dtype == torch.bool else torch.zeros(m_shape, dtype=m_dtype))
    return q, k, v, mask


def _measure(key):
    q, k, v, mask = _operands(key)
    scale = q.shape[-1] ** -0.5
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    if not key[-1]:  # the forward alone
        def forward():
            with torch.no_grad():
                F.scaled_dot_product_attention(qd, kd, vd, attn_mask=mask, scale=scale)

        def forward_written():
            torch.softmax(qd @ kd.transpose(-2, -1), -1) @ vd

        medians = alternating_medians({"written": forward_written, "fused": forward}, _ROUNDS, _BUDGET_S)
        return medians["written"], medians["fused"]
    grad = torch.randn(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)

    def fused():
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        torch.autograd.grad(out, (q, k, v), grad)

    def written():
        probs = torch.softmax(qd @ kd.transpose(-2, -1), -1)
        probs @ vd
        dprobs = grad @ vd.transpose(-2, -1)
        probs.transpose(-2, -1) @ grad
        dscores = torch._softmax_backward_data(dprobs, probs, -1, probs.dtype)
        dscores @ kd
        dscores.transpose(-2, -1) @ qd

    medians = alternating_medians({"written": written, "fused": fused}, _ROUNDS, _BUDGET_S)
    return medians["written"], medians["fused"]


def fused_is_faster(q, k, v, mask, training):
    """Whether PyTorch's fused attention (forward, and backward where `training`)
    beats the written-out form on these operands' shapes (measured once per process
    and problem)."""
    return measured_choice(problem(q, k, v, mask, training), _choices, measurements, _measure, MARGIN,
                           grad=training)


def reset():
    _choices.clear()
    measurements.clear()
