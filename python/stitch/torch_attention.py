"""Attention written out in ATen ops, found and replaced by one
`aten.scaled_dot_product_attention` call (docs/torch.md, Attention).

A model that spells attention out (`softmax(q @ k.transpose(-2, -1) * s + mask) @ v`)
reaches the backend as two `bmm` over [B*H, T, D] views of copies of the heads, a scale,
a mask and a softmax that writes the [B, H, Tq, Tk] scores to memory. PyTorch's fused
attention computes the same without writing them. The pattern, on the core ATen graph:

    bmm(view(clone?(expand(Q))), view(clone?(expand(transpose(K)))))  -> view [B, H, Tq, Tk]
      -> mul or div by a number (optional)
      -> add a float mask, or where(cond, -inf, s) / where(cond, s, -inf) (optional)
      -> _softmax over the last axis
      -> bmm(view(expand(.)), view(clone?(expand(V))))  -> view [B, H, Tq, Dv]

where every intermediate has no other user (a training graph that saves the
probabilities for the backward keeps its form) and the dtype is a float one. The replacement is
scaled_dot_product_attention(Q, K, V, attn_mask, scale=s), the -inf selects made an
additive mask of 0 and -inf.
"""

import torch

aten = torch.ops.aten

_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _expr(d):
    return d.node.expr if isinstance(d, torch.SymInt) else d


def _same_shape(a, b):
    """Sizes compared as expressions, so that symbolic sizes add no guard."""
    return len(a) == len(b) and all(_expr(x) == _expr(y) for x, y in zip(a, b))


def _only_user(node, user):
    return len(node.users) == 1 and user in node.users


def _source_4d(node):
    """The [B, H, T, D] tensor a bmm operand [B*H, T, D] is a view of (through an
    expand to its own shape and an optional contiguous copy), or None."""
    if not (isinstance(node, torch.fx.Node) and node.target in _VIEWS and len(node.users) == 1):
        return None
    inner = node.args[0]
    if inner.target is aten.clone.default and len(inner.users) == 1:
        inner = inner.args[0]
    if inner.target is not aten.expand.default or len(inner.users) != 1:
        return None
    source = inner.args[0]
    shape, want = _val(source), _val(inner)
    if shape is None or want is None or shape.dim() != 4 or not _same_shape(shape.shape, want.shape):
        return None
    b, h, t, d = shape.shape
    if not _same_shape(_val(node).shape, (b * h, t, d)):
        return None
    return source


def _untransposed(node):
    """K where node is K with its last two axes swapped, else None."""
    if node.target is aten.permute.default and list(node.args[1]) in ([0, 1, 3, 2], [0, 1, -1, -2]):
        return node.args[0]
    if node.target is aten.transpose.int and sorted(d % 4 for d in node.args[1:3]) == [2, 3]:
        return node.args[0]
    return None


def _is_neg_inf(x):
    if isinstance(x, (int, float)):
        return x == float("-inf")
    return (isinstance(x, torch.fx.Node) and x.target is aten.scalar_tensor.default
            and x.args[0] == float("-inf"))


def _mask_of(node):
    """(scores before the mask, the additive mask node or None) for node, the softmax's
    input; None where node masks in a form not matched."""
    if node.target is aten.add.Tensor and len(node.args) == 2:
        scores, mask = node.args
        mval, sval = _val(mask), _val(scores)
        if mval is not None and sval is not None and mval.dtype == sval.dtype and len(node.kwargs) == 0:
            return scores, mask
        return None
    if node.target is aten.where.self:
        cond, a, b = node.args
        if _is_neg_inf(a) and isinstance(b, torch.fx.Node):
            return b, (cond, True)
        if _is_neg_inf(b) and isinstance(a, torch.fx.Node):
            return a, (cond, False)
        return None
    return node, None


def _scale_of(node):
    """(the scores before scaling, the scale) for node."""
    if node.target is aten.mul.Tensor and isinstance(node.args[1], (int, float)):
        return node.args[0], float(node.args[1])
    if node.target is aten.div.Tensor and isinstance(node.args[1], (int, float)) and node.args[1] != 0:
        return node.args[0], 1.0 / float(node.args[1])
    return node, 1.0


def _match(out_view):
    """The pieces of attention ending at out_view (a view of the second bmm to
    [B, H, Tq, Dv]), or None."""
    bmm2 = out_view.args[0]
    if bmm2.target is not aten.bmm.default or not _only_user(bmm2, out_view):
        return None
    probs_view, v_view = bmm2.args
    v = _source_4d(v_view)
    if v is None or probs_view.target not in _VIEWS or not _only_user(probs_view, bmm2):
        return None
    expand = probs_view.args[0]
    if expand.target is not aten.expand.default or not _only_user(expand, probs_view):
        return None
    softmax = expand.args[0]
    if softmax.target is not aten._softmax.default or softmax.args[2] or not _only_user(softmax, expand):
        return None
    if softmax.args[1] % 4 != 3 or _val(softmax).dim() != 4:
        return None
    masked = _mask_of(softmax.args[0])
    if masked is None:
        return None
    scaled, mask = masked
    chain = [softmax.args[0]] if scaled is not softmax.args[0] else []
    scores, scale = _scale_of(scaled)
    if scores is not scaled:
        chain.append(scaled)
    if scores.target not in _VIEWS:
        return None
    bmm1 = scores.args[0]
    if bmm1.target is not aten.bmm.default or not _only_user(bmm1, scores):
        return None
    for node, user in zip([scores] + chain[::-1], chain[::-1] + [softmax]):
        if not _only_user(node, user):
            return None
    q = _source_4d(bmm1.args[0])
    kt = _source_4d(bmm1.args[1])
    k = _untransposed(kt) if kt is not None else None
    if q is None or k is None:
        return None
    # In f16 and bf16 eager rounds the scores and the probabilities to the half type;
    # the fused kernel keeps them in f32, as Inductor's replacement does, so the
    # result is nearer the exact one than eager's (docs/torch.md, Attention).
    dtypes = {_val(n).dtype for n in (q, k, v, softmax)}
    if len(dtypes) != 1 or dtypes.pop() not in _DTYPES:
        return None
    return q, k, v, mask, scale


def _additive_mask(graph, cond, masked_where_true, like):
    """where(cond, -inf, 0), or where(cond, 0, -inf): the mask as SDPA adds it."""
    fake_mode = getattr(like, "fake_mode", None)
    values = []
    for x in (float("-inf"), 0.0):
        node = graph.call_function(aten.scalar_tensor.default, (x,), {"dtype": like.dtype, "device": like.device})
        with fake_mode if fake_mode is not None else torch.no_grad():
            node.meta["val"] = torch.scalar_tensor(x, dtype=like.dtype, device=like.device)
        values.append(node)
    inf, zero = values
    mask = graph.call_function(aten.where.self, (cond, inf, zero) if masked_where_true else (cond, zero, inf))
    with fake_mode if fake_mode is not None else torch.no_grad():
        mask.meta["val"] = torch.where(_val(cond), values[0].meta["val"], values[1].meta["val"])
    return mask


def fuse_attention(gm, chosen=None):
    """Replaces each attention the pattern above finds in gm where `chosen(q, k, v,
    mask)` (their values; None: every one) says so; returns how many."""
    graph = gm.graph
    found = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _VIEWS or _val(node) is None or _val(node).dim() != 4:
            continue
        if not isinstance(node.args[0], torch.fx.Node) or node.args[0].target is not aten.bmm.default:
            continue
        match = _match(node)
        if match is None:
            continue
        q, k, v, mask, scale = match
        if chosen is not None:
            mask_value = _val(mask[0]) if isinstance(mask, tuple) else _val(mask)
            if not chosen(_val(q), _val(k), _val(v), mask_value):
                continue
        with graph.inserting_before(node):
            if isinstance(mask, tuple):  # where(cond, -inf, s) or where(cond, s, -inf): 0 and -inf
                mask = _additive_mask(graph, *mask, _val(q))
            elif isinstance(mask, torch.fx.Node):
                # A mask that requires grad (T5's position bias is a parameter) sends
                # PyTorch's dispatch to the unfused math kernel even under no_grad; the
                # graph's autograd is already split, so the mask is detached.
                detached = graph.call_function(aten.detach.default, (mask,))
                detached.meta["val"] = _val(mask)
                mask = detached
            attention = graph.call_function(aten.scaled_dot_product_attention.default, (q, k, v, mask),
                                            {"scale": scale})
        attention.meta["val"] = _val(node)
        node.replace_all_uses_with(attention)
        found += 1
    if found:
        graph.eliminate_dead_code()
        gm.recompile()
    return found

