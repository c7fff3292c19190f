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
the default and the written-out form is chosen where it takes at most MARGIN of the
fused kernels' time: measured alone, the written-out form is spared part of what it
costs in a model (docs/torch.md, Fused where measured faster).
"""

import torch
import torch.nn.functional as F

from .torch_products import alternating_medians, measured_choice

# The written-out form must take at most this fraction of the fused kernels' time
# (medians, measured alone) to be chosen. In models, f32 attention written out ran
# level with fused or slower where alone it took 0.72-0.99 of fused's time, and bf16
# written out ran faster or level where alone it took 0.23-0.73 (docs/torch.md).
MARGIN = 0.8
_ROUNDS = 5          # timed calls of each, alternating
_BUDGET_S = 1.0      # a problem's measurement stops early past this many seconds

# (q, k, v shapes, dtype, mask shape and dtype or None, training) -> whether written out was chosen
_choices = {}
# The measurements made, for tests and the docs: key -> (fused seconds, written-out seconds)
measurements = {}


def _hint(d):
    return int(d.node.hint) if isinstance(d, torch.SymInt) else int(d)


def _layout(t):
    """The order of t's axes in memory, outermost first, where t is a permuted view of
    a contiguous tensor (q, k and v as `x.view(B, T, H, D).transpose(1, 2)` of a
    projection: (0, 2, 1, 3)); None where t is contiguous or lies otherwise."""
    shape = [_hint(d) for d in t.shape]
    strides = [_hint(s) for s in t.stride()]
    order = sorted(range(t.dim()), key=lambda i: -strides[i])
    expected = 1
    for i in reversed(order):
        if shape[i] != 1 and strides[i] != expected:
            return None
        expected *= shape[i]
    return None if order == list(range(t.dim())) else tuple(order)


def problem(q, k, v, mask, training):
    """The key of an attention: its operands' shapes, layouts and dtype, its mask's
    (fake tensors, as the graphs hold them; sizes as the example's), and whether a
    backward runs too."""
    def shape(t):
        return tuple(_hint(d) for d in t.shape)

    masked = None if mask is None else (shape(mask), mask.dtype)
    return (shape(q), shape(k), shape(v), q.dtype, masked, training, tuple(_layout(t) for t in (q, k, v)))


def _laid_out(shape, dtype, order):
    """A random tensor of `shape` whose memory lies in `order` (None: contiguous),
    requiring grad."""
    if order is None:
        return torch.randn(shape, dtype=dtype, requires_grad=True)
    memory = torch.randn([shape[i] for i in order], dtype=dtype, requires_grad=True)
    return memory.permute([order.index(i) for i in range(len(shape))])


def _operands(key):
    q_shape, k_shape, v_shape, dtype, masked, _, layouts = key
    q, k, v = (_laid_out(s, dtype, order) for s, order in zip((q_shape, k_shape, v_shape), layouts))
    mask = None
    if masked is not None:
        m_shape, m_dtype = masked
        # A causal-like boolean mask (no row empty), or a float bias of zeros.
        mask = (torch.ones(m_shape[-2:], dtype=torch.bool).tril().expand(m_shape).contiguous()
                if m_dtype == torch.bool else torch.zeros(m_shape, dtype=m_dtype))
    return q, k, v, mask


def _merged(o):
    """The heads merged back, `o.transpose(1, 2).reshape(B, T, H * D)`, as models
    write it: a view where o already lies so (PyTorch's fused kernel writes its output
    so), a copy otherwise (a product's [B, H, T, D])."""
    return o.transpose(1, 2).reshape(o.shape[0], o.shape[2], -1)


def _as_operand(g, order):
    """A gradient in its operand's memory layout, where the backward of the views
    that made the operand (a projection's `view` and `transpose`) takes it: a copy
    unless it already lies so."""
    if order is None:
        return g.contiguous()
    return g.permute(order).contiguous()


def _measure(key):
    """Seconds of the written-out form and of the fused kernels on the key's problem.
    Each form gets its operands laid out as the graph has them, merges the heads of
    its output and, in training, takes the output's gradient as the merged heads'
    and lays out the operands' gradients as theirs: the copies written-out products
    need (a [B, T, H, D] projection's heads made [B * H, T, D] and back; Stitch's
    partitions do them as PyTorch's matmul does here) count against them."""
    q, k, v, mask = _operands(key)
    layouts = key[-1]
    scale = q.shape[-1] ** -0.5
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    if not key[5]:  # the forward alone
        def forward():
            with torch.no_grad():
                _merged(F.scaled_dot_product_attention(qd, kd, vd, attn_mask=mask, scale=scale))

        def forward_written():
            _merged(torch.softmax(qd @ kd.transpose(-2, -1), -1) @ vd)

        medians = alternating_medians({"written": forward_written, "fused": forward}, _ROUNDS, _BUDGET_S)
        return medians["written"], medians["fused"]
    b, h, t = q.shape[0], q.shape[1], q.shape[2]
    merged_grad = torch.randn(b, t, h * v.shape[-1], dtype=q.dtype)
    grad = merged_grad.view(b, t, h, v.shape[-1]).transpose(1, 2)

    def fused():
        out = _merged(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale))
        grads = torch.autograd.grad(out, (q, k, v), merged_grad)
        for g, order in zip(grads, layouts):
            _as_operand(g, order)

    def written():
        probs = torch.softmax(qd @ kd.transpose(-2, -1), -1)
        _merged(probs @ vd)
        dprobs = grad @ vd.transpose(-2, -1)
        dv = probs.transpose(-2, -1) @ grad
        dscores = torch._softmax_backward_data(dprobs, probs, -1, probs.dtype)
        dq = dscores @ kd
        dk = dscores.transpose(-2, -1) @ qd
        for g, order in zip((dq, dk, dv), layouts):
            _as_operand(g, order)

    medians = alternating_medians({"written": written, "fused": fused}, _ROUNDS, _BUDGET_S)
    return medians["written"], medians["fused"]


def written_out_chosen(written_s, fused_s):
    """The rule: the written-out form where it took at most MARGIN of the fused time."""
    return written_s <= MARGIN * fused_s


def _measure_fused_first(key):
    written_s, fused_s = _measure(key)
    return fused_s, written_s


def fused_chosen(q, k, v, mask, training):
    """Whether PyTorch's fused attention (forward, and backward where `training`) runs
    this attention: unless the written-out form was measured clearly faster on these
    operands' shapes (once per process and problem; written_out_chosen)."""
    written = measured_choice(problem(q, k, v, mask, training), _choices, measurements, _measure_fused_first,
                              MARGIN, grad=training)
    return not written


def reset():
    _choices.clear()
    measurements.clear()
