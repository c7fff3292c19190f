"""Pieces shared by the Transformer generators (bert.py, gpt2_block.py, t5_block.py).

Hidden states are kept as a matrix f32[T, H] with T = batch * seq, as the reference
implementations do around their projections (a projection is one 2-D matrix product
plus a bias row); attention reshapes to f32[batch, heads, seq, head_dim] and back.
"""
from stitch_text import call


def linear(g, name, x, n_in, n_out, bias=True):
    """`name = x @ name_w (+ name_b)`, with the weight f32[n_in, n_out] and the bias
    f32[n_out] as graph parameters."""
    w = g.param(f"{name}_w", "f32", [n_in, n_out])
    y = call("dot", x, w)
    if bias:
        b = g.param(f"{name}_b", "f32", [n_out])
        y = call("add", y, b)
    return g.set(name, y)


def split_heads(g, name, x, batch, seq, heads, head_dim, keys=False):
    """f32[T, H] -> f32[batch, heads, seq, head_dim], or with `keys` the transposed
    f32[batch, heads, head_dim, seq] that a `dot` with the queries needs."""
    perm = [0, 2, 3, 1] if keys else [0, 2, 1, 3]
    return g.let(name, "transpose", call("reshape", x, shape=[batch, seq, heads, head_dim]), perm=perm)


def merge_heads(g, name, ctx, tokens, hidden):
    """f32[batch, heads, seq, head_dim] -> f32[T, H]."""
    return g.let(name, "reshape", call("transpose", ctx, perm=[0, 2, 1, 3]), shape=[tokens, hidden])


def check_heads(args, hidden, heads):
    if hidden % heads:
        args.parser.error(f"hidden size {hidden} is not a multiple of heads {heads}")
    return hidden // heads
