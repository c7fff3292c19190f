"""Attention written out, found in Dynamo's graph before AOTAutograd and replaced by
one `F.scaled_dot_product_attention` call (docs/torch.md, Attention in training).

The pass over the core ATen graph (torch_attention.py) cannot fuse a training graph's
attention: there the forward saves the probabilities for the backward, and the
backward computes through them. Here, before AOTAutograd traces the forward and the
backward, the attention is still the expression the model wrote, so AOTAutograd traces
PyTorch's fused attention instead: its forward (which saves only the output and the
rows' log-sum-exp) and its own backward, as Inductor's training graphs do. The pattern,
in the torch-level ops Dynamo records (functions, operators and Tensor methods):

    matmul(Q, transpose(K, -2, -1))     Q, K, V: [B, H, T, D], one float dtype
      -> * s, s *, or / s, s a number     (optional)
      -> + mask, masked_fill(cond, -inf), where(cond, -inf, .) or where(cond, ., -inf)
                                         (optional; a mask that needs a gradient keeps
                                          the form: the fused backward gives it none)
      -> softmax over the last axis      (casts to the dtype it has allowed around it)
      -> matmul(., V)

where every intermediate has no other user. `masked_fill(cond, -inf)` and
`where(cond, -inf, .)` become SDPA's boolean mask `~cond` (true where a score takes
part), `where(cond, ., -inf)` the mask `cond`.
"""

import operator

import torch
import torch.nn.functional as F

_MATMULS = (operator.matmul, torch.matmul)
_SOFTMAXES = (F.softmax, torch.softmax, torch.Tensor.softmax)
_NOTS = (operator.invert, torch.logical_not, torch.bitwise_not)
_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _value(node):
    """The example value Dynamo recorded for a node (a fake tensor), or None."""
    return node.meta.get("example_value") if isinstance(node, torch.fx.Node) else None


def _is(node, functions=(), methods=()):
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "call_function":
        return node.target in functions
    return node.op == "call_method" and node.target in methods


def _same(a, b):
    """Sizes compared as expressions, so that symbolic sizes add no guard."""
    def expr(d):
        return d.node.expr if isinstance(d, torch.SymInt) else d
    return len(a) == len(b) and all(expr(x) == expr(y) for x, y in zip(a, b))


def _only_user(node, user):
    return len(node.users) == 1 and user in node.users


def _arg(node, index, name, default=None):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _untransposed(node):
    """K where node is K with its last two axes swapped (a 4-D K), else None."""
    if _is(node, (torch.transpose,), ("transpose",)) and len(node.args) == 3:
        if sorted(d % 4 for d in node.args[1:3] if isinstance(d, int)) == [2, 3]:
            return node.args[0]
    if _is(node, (torch.permute,), ("permute",)):
        dims = node.args[1] if len(node.args) == 2 and isinstance(node.args[1], (list, tuple)) else node.args[1:]
        if [d % 4 if isinstance(d, int) else d for d in dims] == [0, 1, 3, 2]:
            return node.args[0]
    return None


def _same_cast(node):
    """The input of node when node converts to the dtype it already has (`.float()` on
    f32, `.type_as(x)`, `.to(dtype)`), else None."""
    if node.op != "call_method" or node.target not in ("float", "type_as", "to", "double", "half", "bfloat16"):
        return None
    source = node.args[0]
    before, after = _value(source), _value(node)
    if before is None or after is None or before.dtype != after.dtype or before.device != after.device:
        return None
    return source


def _past_cast(node, chain):
    """node's input where node is a same-dtype cast (which joins the chain), else node."""
    source = _same_cast(node)
    if source is None:
        return node
    chain.append(node)
    return source


def _softmax_input(node):
    """The scores node softmaxes over its last axis, or None."""
    if not _is(node, _SOFTMAXES, ("softmax",)):
        return None
    dim = _arg(node, 1, "dim")
    if not isinstance(dim, int) or dim % 4 != 3 or _arg(node, 2, "dtype") is not None:
        return None
    return node.args[0]


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _scale_of(node):
    """(the scores before scaling, the scale) for node."""
    if _is(node, (operator.mul, torch.mul), ("mul",)) and len(node.args) == 2:
        a, b = node.args
        if _number(b) and isinstance(a, torch.fx.Node):
            return a, float(b)
        if _number(a) and isinstance(b, torch.fx.Node) and node.op == "call_function":
            return b, float(a)
    if _is(node, (operator.truediv, torch.div), ("div",)) and len(node.args) == 2 and not node.kwargs:
        a, b = node.args
        if _number(b) and b != 0 and isinstance(a, torch.fx.Node):
            return a, 1.0 / float(b)
    return node, None


def _mask_of(node):
    """(scores before the mask, mask) for node, the softmax's input: mask is None,
    ("add", tensor) or ("keep", bool tensor that is true where a score takes part);
    None where node masks in a form not matched (or with a mask that needs a gradient)."""
    if _is(node, (operator.add, torch.add), ("add",)) and len(node.args) == 2 and not node.kwargs:
        for scores, mask in (node.args, node.args[::-1]):
            s, m = _value(scores), _value(mask)
            if s is None or m is None or not _from_matmul(scores):
                continue
            if m.dtype != s.dtype or m.requires_grad or m.dim() > 4 or not _same(_value(node).shape, s.shape):
                return None
            return scores, ("add", mask)
        return None
    if _is(node, (torch.masked_fill,), ("masked_fill",)) and len(node.args) == 3:
        scores, cond, fill = node.args
        c = _value(cond)
        if not _is_neg_inf(fill) or c is None or c.dtype != torch.bool:
            return None
        if c.dim() > 4:
            return None
        return scores, ("fill", cond)
    if _is(node, (torch.where,), ("where",)) and len(node.args) == 3 and not node.kwargs:
        cond, a, b = node.args
        c = _value(cond)
        if c is None or c.dtype != torch.bool or c.dim() > 4:
            return None
        if _is_neg_inf(b) and isinstance(a, torch.fx.Node) and node.op == "call_function":
            return a, ("keep", cond)  # where(cond, scores, -inf)
        if _is_neg_inf(a) and isinstance(b, torch.fx.Node):
            return b, ("fill", cond)  # where(cond, -inf, scores), as masked_fill
        return None
    return node, None


def _is_neg_inf(x):
    return isinstance(x, float) and x == float("-inf")


def _from_matmul(node):
    """Whether node is the product of scores or a scale of it (which side of an add
    the scores are)."""
    scores, _ = _scale_of(node)
    return _is(scores, _MATMULS, ("matmul",))


def _match(out):
    """(Q, K, V, mask, scale) of the attention ending at `out` (the second matmul), or None."""
    probs, v = out.args
    if not isinstance(probs, torch.fx.Node) or not isinstance(v, torch.fx.Node):
        return None
    chain = [out]
    probs = _past_cast(probs, chain)
    scores = _softmax_input(probs)
    if scores is None:
        return None
    chain.append(probs)
    scores = _past_cast(scores, chain)
    masked = _mask_of(scores)
    if masked is None:
        return None
    before_mask, mask = masked
    if mask is not None:
        chain.append(scores)
    product, scale = _scale_of(before_mask)
    if scale is not None:
        chain.append(before_mask)
    if not _is(product, _MATMULS, ("matmul",)):
        return None
    chain.append(product)
    for node, user in zip(chain[1:], chain[:-1]):
        if not _only_user(node, user):
            return None
    q, kt = product.args
    k = _untransposed(kt) if isinstance(kt, torch.fx.Node) else None
    if k is None or not isinstance(q, torch.fx.Node):
        return None
    values = [_value(n) for n in (q, k, v, out)]
    if any(x is None or x.dim() != 4 for x in values):
        return None
    qv, kv, vv, ov = values
    if len({x.dtype for x in values}) != 1 or qv.dtype not in _DTYPES or len({x.device for x in values}) != 1:
        return None
    # PyTorch's fused CPU kernel needs one head size for Q, K and V; SDPA would run its
    # unfused math for others, no better than the form written.
    if not (_same(qv.shape[:2], kv.shape[:2]) and _same(kv.shape[:3], vv.shape[:3])
            and _same(qv.shape[3:], kv.shape[3:]) and _same(kv.shape[3:], vv.shape[3:])):
        return None
    return q, k, v, mask, scale, chain + [kt]


def _keep_mask(graph, cond):
    """SDPA's boolean mask for masked_fill(cond, -inf): `~cond`, or x where cond is `~x`."""
    if _is(cond, _NOTS, ("logical_not", "bitwise_not", "__invert__")) and len(cond.args) == 1:
        inner = cond.args[0]
        if _value(inner) is not None and _value(inner).dtype == torch.bool:
            return inner
    node = graph.call_function(torch.logical_not, (cond,))
    value = _value(cond)
    fake_mode = getattr(value, "fake_mode", None)
    if fake_mode is not None:
        with fake_mode:
            node.meta["example_value"] = torch.logical_not(value)
    return node


def fuse_attention_before_autograd(gm, chosen=None):
    """Replaces each attention the pattern above finds in gm, Dynamo's graph, where
    `chosen(q, k, v, mask)` (their example values; None: every one) says so; returns
    how many."""
    graph = gm.graph
    found = 0
    for node in list(graph.nodes):
        if not _is(node, _MATMULS, ("matmul",)) or len(node.args) != 2 or node.kwargs:
            continue
        match = _match(node)
        if match is None:
            continue
        q, k, v, mask, scale, chain = match
        if chosen is not None and not chosen(_value(q), _value(k), _value(v),
                                             None if mask is None else _value(mask[1])):
            continue
        kwargs = {}
        with graph.inserting_before(node):
            if mask is not None:
                kind, tensor = mask
                kwargs["attn_mask"] = tensor if kind in ("add", "keep") else _keep_mask(graph, tensor)
            if scale is not None:
                kwargs["scale"] = scale
            else:
                kwargs["scale"] = 1.0  # written out without a scale: SDPA's default is 1/sqrt(D)
            attention = graph.call_function(F.scaled_dot_product_attention, (q, k, v), kwargs)
        attention.meta.update(node.meta)
        node.replace_all_uses_with(attention)
        for dead in chain + ([mask[1]] if mask is not None else []):
            if not dead.users and dead.op in ("call_function", "call_method"):  # K^T, a mask may have other users
                graph.erase_node(dead)
        found += 1
    if found:
        gm.recompile()
    return found
