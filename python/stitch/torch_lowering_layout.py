"""ATen views, copies between layouts and data movement as Stitch ops (docs/torch.md)."""

import math

import torch

from .torch_lowering import Outputs, cast, constant, elementwise, ints, lowers, number, reshape, transpose

aten = torch.ops.aten


@lowers(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
        aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.flatten.using_ints,
        aten.view_copy.default)
def _view(g, out, base, x, *args):
    return reshape(g, x, out.shape)


@lowers(aten.expand.default, aten.expand_copy.default)
def _expand(g, out, base, x, size, *, implicit=False):
    if x.shape == out.shape:
        return x
    return g.op(base, f"broadcast({x.name}, shape={ints(out.shape)})", x.dtype, out.shape)


@lowers(aten.permute.default, aten.permute_copy.default)
def _permute(g, out, base, x, dims):
    return transpose(g, x, dims, base)


@lowers(aten.transpose.int)
def _transpose_int(g, out, base, x, dim0, dim1):
    perm = list(range(len(x.shape)))
    if perm:
        d0, d1 = dim0 % len(perm), dim1 % len(perm)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return transpose(g, x, perm, base)


@lowers(aten.t.default)
def _t(g, out, base, x):
    return transpose(g, x, list(reversed(range(len(x.shape)))), base)


def _slice(g, x, dim, start, stop, step, base):
    dim = dim % len(x.shape)
    begin, end, stride = slice(start, stop, step).indices(x.shape[dim])
    if (begin, end, stride) == (0, x.shape[dim], 1):
        return x
    starts = [0] * len(x.shape)
    stops = list(x.shape)
    steps = [1] * len(x.shape)
    starts[dim], stops[dim], steps[dim] = begin, end, stride
    extent = len(range(begin, end, stride))
    shape = tuple(extent if i == dim else d for i, d in enumerate(x.shape))
    return g.op(base, f"slice({x.name}, start={ints(starts)}, stop={ints(stops)}, step={ints(steps)})",
                x.dtype, shape)


def _refuse_nonpositive_step(node):
    step = node.args[4] if len(node.args) > 4 else node.kwargs.get("step", 1)
    return None if isinstance(step, int) and step > 0 else f"slice with step {step}"


@lowers(aten.slice.Tensor, aten.slice_copy.Tensor, refuse=_refuse_nonpositive_step)
def _slice_tensor(g, out, base, x, dim=0, start=None, end=None, step=1):
    return _slice(g, x, dim, start, end, step, base)


def _refuse_strided_scatter(node):
    step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
    return None if step == 1 else f"slice_scatter with step {step}"


@lowers(aten.slice_scatter.default, refuse=_refuse_strided_scatter)
def _slice_scatter(g, out, base, x, src, dim=0, start=None, end=None, step=1):
    """x with x[begin:end] along dim replaced by src (the backward of a slice): the
    part of x before, src and the part after, concatenated."""
    dim = dim % len(x.shape)
    begin, stop, _ = slice(start, end, 1).indices(x.shape[dim])
    parts = [_slice(g, x, dim, 0, begin, 1, base + "_before")] if begin > 0 else []
    parts.append(cast(g, src, out.dtype))
    if stop < x.shape[dim]:
        parts.append(_slice(g, x, dim, stop, x.shape[dim], 1, base + "_after"))
    if len(parts) == 1:
        return parts[0]
    return g.op(base, f"concat({', '.join(p.name for p in parts)}, axis={dim})", out.dtype, out.shape)


@lowers(aten.select.int, aten.select_copy.int)
def _select(g, out, base, x, dim, index):
    index = index % x.shape[dim % len(x.shape)]
    return reshape(g, _slice(g, x, dim, index, index + 1, 1, base), out.shape)


def _split_at(g, x, dim, sizes, base):
    def piece(begin, size):
        return lambda: _slice(g, x, dim, begin, begin + size, 1, base)

    begins = [sum(sizes[:i]) for i in range(len(sizes))]
    return Outputs([piece(b, s) for b, s in zip(begins, sizes)])


@lowers(aten.split_with_sizes.default)
def _split_with_sizes(g, out, base, x, split_sizes, dim=0):
    return _split_at(g, x, dim, list(split_sizes), base)


@lowers(aten.split.Tensor)
def _split(g, out, base, x, split_size, dim=0):
    return _split_at(g, x, dim, [o.shape[dim] for o in out], base)


@lowers(aten.unbind.int)
def _unbind(g, out, base, x, dim=0):
    pieces = _split_at(g, x, dim, [1] * x.shape[dim % len(x.shape)], base)
    return Outputs([lambda i=i: reshape(g, pieces[i], out[i].shape) for i in range(len(out))])


@lowers(aten.cat.default)
def _cat(g, out, base, tensors, dim=0):
    rank = len(out.shape)
    # PyTorch skips 1-D empty tensors among tensors of higher rank (a legacy rule).
    parts = [cast(g, t, out.dtype) for t in tensors if not (t.shape == (0,) and rank != 1)]
    if len(parts) == 1:
        return parts[0]
    names = ", ".join(p.name for p in parts)
    return g.op(base, f"concat({names}, axis={dim % rank})", out.dtype, out.shape)


def _refuse_negative_pad(node):
    pad = node.args[1]
    return None if all(isinstance(p, int) and p >= 0 for p in pad) else "constant_pad_nd that crops"


@lowers(aten.constant_pad_nd.default, refuse=_refuse_negative_pad)
def _constant_pad_nd(g, out, base, x, pad, value=0):
    rank = len(x.shape)
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return g.op(base, f"pad({x.name}, low={ints(low)}, high={ints(high)}, value={number(value, x.dtype)})",
                x.dtype, out.shape)


@lowers(aten.index_select.default)
def _index_select(g, out, base, x, dim, index):
    y = g.op(base, f"gather({x.name}, {index.name}, axis={dim % len(x.shape)})", x.dtype,
             x.shape[:dim % len(x.shape)] + index.shape + x.shape[dim % len(x.shape) + 1:])
    return reshape(g, y, out.shape)


@lowers(aten.embedding.default)
def _embedding(g, out, base, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return g.op(base, f"gather({weight.name}, {indices.name}, axis=0)", weight.dtype, out.shape)


def _checked_index(g, index, n, base):
    """`index` itself where 0 <= index < n; anything else raises as eager PyTorch does (a
    gather from the positions 0..n-1, a negative index first made out of range, since
    Stitch's gather would wrap it)."""
    positions = g.op(base + "_positions", f"iota(shape=[{n}], axis=0, dtype=i64)", torch.int64, (n,))
    negative = g.op(base + "_negative", f"lt({index.name}, {constant(g, 0, torch.int64).name})", torch.bool,
                    index.shape)
    outside = g.op(base + "_outside", f"select({negative.name}, {constant(g, n, torch.int64).name}, {index.name})",
                   torch.int64, index.shape)
    return g.op(base + "_checked", f"gather({positions.name}, {outside.name}, axis=0)", torch.int64, index.shape)


@lowers(aten.gather.default)
def _gather(g, out, base, x, dim, index, *, sparse_grad=False):
    """torch.gather (out[i] = x[i with index[i] at dim]) as numpy's take on x flattened:
    the flat position is the sum over axes of the coordinate, index[i] at dim, times
    x's stride there."""
    rank = len(x.shape)
    if rank == 0:
        return x
    dim = dim % rank
    shape = tuple(index.shape)
    flat = None
    for d in range(rank):
        stride = math.prod(x.shape[d + 1:])
        if d == dim:
            coord = _checked_index(g, cast(g, index, torch.int64), x.shape[dim], base)
        else:
            coord = g.op(base + "_i", f"iota(shape={ints(shape)}, axis={d}, dtype=i64)", torch.int64, shape)
        if stride != 1:
            k = constant(g, stride, torch.int64)
            coord = g.op(base + "_at", f"mul({coord.name}, {k.name})", torch.int64, shape)
        flat = coord if flat is None else g.op(base + "_at", f"add({flat.name}, {coord.name})", torch.int64, shape)
    xs = reshape(g, x, (math.prod(x.shape),))
    return g.op(base, f"gather({xs.name}, {flat.name}, axis=0)", x.dtype, out.shape)


def _refuse_wide_scatter(node):
    x, dim, index = (meta_of(a) for a in node.args[:3])
    dim = dim % max(x.dim(), 1)
    one_per_row = (index.dim() == x.dim() and index.shape[dim] == 1
                   and all(index.shape[d] == x.shape[d] for d in range(x.dim()) if d != dim))
    return None if one_per_row else "scatter of more than one index per row (only a one-hot is lowered)"


def meta_of(a):
    return a.meta.get("val") if isinstance(a, torch.fx.Node) else a


@lowers(aten.scatter.value, refuse=_refuse_wide_scatter)
def _scatter_value(g, out, base, x, dim, index, value):
    """x with `value` at one index along dim per row (a one-hot, as a cross-entropy's
    backward writes it): select where an iota along dim equals the row's index, checked
    to be in range as PyTorch does."""
    rank = len(x.shape)
    dim = dim % max(rank, 1)
    n = x.shape[dim]
    checked = _checked_index(g, cast(g, index, torch.int64), n, base)
    positions = g.op(base + "_i", f"iota(shape={ints(x.shape)}, axis={dim}, dtype=i64)", torch.int64, x.shape)
    hit = g.op(base + "_hit", f"eq({positions.name}, {checked.name})", torch.bool, x.shape)
    filled = constant(g, value, x.dtype)
    return g.op(base, f"select({hit.name}, {filled.name}, {x.name})", x.dtype, x.shape)


# Matrix products (docs/torch.md, Matrix products): Stitch dots, so a bias,
# activation or residual after one runs as the dot's epilogue, and a linear layer's
# transposed weight is read in place by the gemm. Only where the backend's `dots`
# option asks for them (MATRIX_PRODUCTS); f32 and f64.
MATRIX_PRODUCTS = (aten.mm.default, aten.bmm.default, aten.addmm.default)


def _refuse_non_float_product(node):
    dtype = node.meta["val"].dtype
    return None if dtype in (torch.float32, torch.float64) else f"a {dtype} matrix product"


@lowers(aten.mm.default, aten.bmm.default, refuse=_refuse_non_float_product)
def _mm(g, out, base, a, b):
    return g.op(base, f"dot({a.name}, {b.name})", out.dtype, out.shape)


@lowers(aten.addmm.default, refuse=_refuse_non_float_product)
def _addmm(g, out, base, bias, a, b, *, beta=1, alpha=1):
    d = g.op(base + "_dot", f"dot({a.name}, {b.name})", out.dtype, out.shape)
    if alpha != 1:
        d = elementwise(g, "mul", [d, alpha], out.dtype)
    if beta == 0:
        return d
    if beta != 1:
        bias = elementwise(g, "mul", [bias, beta], out.dtype)
    return elementwise(g, "add", [d, bias], out.dtype, base=base)
