"""ATen reductions and the composites Stitch expands itself (softmax, layer norm) (docs/torch.md)."""

import math

import torch

from .torch_lowering import Outputs, cast, compute_dtype, elementwise, ints, lowers, number, reduce, reduction_axes, reshape

aten = torch.ops.aten


# Reductions -----------------------------------------------------------------------------


def _reduction(op):
    """A reduction whose result dtype PyTorch already decided (out.dtype): the input is
    cast to it first (sum of ints gives i64, any of floats gives bool)."""

    def lower(g, out, base, x, dim=None, keepdim=False, *, dtype=None):
        return reduce(g, op, x, reduction_axes(dim, len(x.shape)), keepdim, out.dtype, base)

    return lower


lowers(aten.sum.dim_IntList)(_reduction("reduce_sum"))
lowers(aten.mean.dim)(_reduction("reduce_mean"))
lowers(aten.amax.default)(_reduction("reduce_max"))
lowers(aten.amin.default)(_reduction("reduce_min"))
lowers(aten.prod.dim_int)(_reduction("reduce_prod"))
lowers(aten.any.dim, aten.any.dims)(_reduction("reduce_any"))
lowers(aten.all.dim, aten.all.dims)(_reduction("reduce_all"))


def _full_reduction(op):
    def lower(g, out, base, x, *, dtype=None):
        return reduce(g, op, x, reduction_axes(None, len(x.shape)), False, out.dtype, base)

    return lower


lowers(aten.sum.default)(_full_reduction("reduce_sum"))
lowers(aten.mean.default)(_full_reduction("reduce_mean"))
lowers(aten.prod.default)(_full_reduction("reduce_prod"))
lowers(aten.any.default)(_full_reduction("reduce_any"))
lowers(aten.all.default)(_full_reduction("reduce_all"))
lowers(aten.max.default)(_full_reduction("reduce_max"))
lowers(aten.min.default)(_full_reduction("reduce_min"))


def _arg_reduction(op):
    def lower(g, out, base, x, dim=None, keepdim=False):
        if dim is None:
            n = math.prod(x.shape)
            flat = g.op(x.name + "_flat", f"reshape({x.name}, shape=[{n}])", x.dtype, (n,))
            index = reduce(g, op, flat, [0], False, torch.int64, base)
            return reshape(g, index, out.shape)
        return reduce(g, op, x, reduction_axes(dim, len(x.shape)), keepdim, torch.int64, base)

    return lower


lowers(aten.argmax.default)(_arg_reduction("argmax"))
lowers(aten.argmin.default)(_arg_reduction("argmin"))


def _value_and_index(op, arg_op):
    # max.dim / min.dim: (values, indices), the first extreme's index, NaN counting as one.
    def lower(g, out, base, x, dim, keepdim=False):
        axes = reduction_axes(dim, len(x.shape))
        return Outputs([lambda: reduce(g, op, x, axes, keepdim, x.dtype, base + "_values"),
                         lambda: reduce(g, arg_op, x, axes, keepdim, torch.int64, base + "_indices")])

    return lower


lowers(aten.max.dim)(_value_and_index("reduce_max", "argmax"))
lowers(aten.min.dim)(_value_and_index("reduce_min", "argmin"))


def _variance(g, x, dim, correction, keepdim, dtype, base):
    """sum((x - mean)^2) / max(n - correction, 0), in the compute dtype, and the mean."""
    compute = compute_dtype(dtype)
    x = cast(g, x, compute)
    axes = reduction_axes(dim, len(x.shape))
    reduced = range(len(x.shape)) if axes is None else axes
    n = math.prod(x.shape[a] for a in reduced)
    correction = 1 if correction is None else correction
    mean = reduce(g, "reduce_mean", x, axes, True, compute, base + "_mean")
    d = elementwise(g, "sub", [x, mean], compute, base=base + "_centered")
    ss = reduce(g, "reduce_sum", elementwise(g, "mul", [d, d], compute), axes, keepdim, compute, base + "_ss")
    var = elementwise(g, "div", [ss, float(max(n - correction, 0))], compute, base=base)
    if not keepdim:
        mean = reshape(g, mean, ss.shape)
    return var, mean


@lowers(aten.var.correction)
def _var(g, out, base, x, dim=None, *, correction=None, keepdim=False):
    return cast(g, _variance(g, x, dim, correction, keepdim, out.dtype, base)[0], out.dtype)


@lowers(aten.std.correction)
def _std(g, out, base, x, dim=None, *, correction=None, keepdim=False):
    var = _variance(g, x, dim, correction, keepdim, out.dtype, base + "_var")[0]
    return cast(g, elementwise(g, "sqrt", [var], var.dtype, base=base), out.dtype)


@lowers(aten.var_mean.correction)
def _var_mean(g, out, base, x, dim=None, *, correction=None, keepdim=False):
    var, mean = _variance(g, x, dim, correction, keepdim, out[0].dtype, base)
    return Outputs([lambda: cast(g, var, out[0].dtype), lambda: cast(g, mean, out[1].dtype)])


# Composites: Stitch expands them into primitives itself (docs/graph-ir.md) -------------


def _softmax_like(op):
    def lower(g, out, base, x, dim, half_to_float=False):
        compute = compute_dtype(out.dtype)
        axis = dim % len(x.shape) if x.shape else 0
        if not x.shape:
            x = reshape(g, x, (1,))
        y = g.op(base, f"{op}({cast(g, x, compute).name}, axis={axis})", compute, x.shape)
        return cast(g, reshape(g, y, out.shape), out.dtype)

    return lower


lowers(aten._softmax.default)(_softmax_like("softmax"))
lowers(aten._log_softmax.default)(_softmax_like("log_softmax"))


@lowers(aten.logsumexp.default)
def _logsumexp(g, out, base, x, dim, keepdim=False):
    compute = compute_dtype(out.dtype)
    return cast(g, reduce(g, "logsumexp", cast(g, x, compute), reduction_axes(dim, len(x.shape)), keepdim,
                            compute, base), out.dtype)


@lowers(aten.native_layer_norm.default)
def _native_layer_norm(g, out, base, x, normalized_shape, weight, bias, eps):
    """(y, mean, rstd): y through Stitch's layer_norm composite; mean and rstd, which
    only training saves, from their own reductions (Stitch merges the common ones)."""
    compute = compute_dtype(x.dtype)
    rank = len(x.shape)
    axes = list(range(rank - len(normalized_shape), rank))
    xc = cast(g, x, compute)

    def y():
        operands = [xc.name] + [cast(g, w, compute).name for w in (weight, bias) if w is not None]
        if weight is None and bias is not None:
            operands = [xc.name]
        v = g.op(base, f"layer_norm({', '.join(operands)}, axes={ints(axes)}, eps={number(eps, torch.float64)})",
                 compute, x.shape)
        if weight is None and bias is not None:
            v = elementwise(g, "add", [v, bias], compute)
        return cast(g, v, out[0].dtype)

    def mean():
        return reduce(g, "reduce_mean", xc, axes, True, compute, base + "_mean")

    def rstd():
        d = elementwise(g, "sub", [xc, outputs[1]], compute)
        var = reduce(g, "reduce_mean", elementwise(g, "mul", [d, d], compute), axes, True, compute, base + "_var")
        return elementwise(g, "rsqrt", [elementwise(g, "add", [var, eps], compute)], compute, base=base + "_rstd")

    outputs = Outputs([y, mean, rstd])
    return Outputs([lambda: outputs[0], lambda: cast(g, outputs[1], out[1].dtype),
                     lambda: cast(g, outputs[2], out[2].dtype)])
