"""Elementwise ATen ops, casts and constants as Stitch ops (docs/torch.md)."""

import torch

from .torch_lowering import Value, broadcast_shape, cast, compute_dtype, constant, elementwise, lowers, meta, probe

aten = torch.ops.aten


# Elementwise -------------------------------------------------------------------------

_UNARY = {
    aten.neg.default: "neg", aten.abs.default: "abs", aten.exp.default: "exp",
    aten.exp2.default: "exp2", aten.log.default: "log", aten.log2.default: "log2",
    aten.log1p.default: "log1p", aten.expm1.default: "expm1", aten.sqrt.default: "sqrt",
    aten.rsqrt.default: "rsqrt", aten.reciprocal.default: "reciprocal", aten.sin.default: "sin",
    aten.cos.default: "cos", aten.tan.default: "tan", aten.tanh.default: "tanh",
    aten.sigmoid.default: "sigmoid", aten.erf.default: "erf", aten.relu.default: "relu",
    aten.floor.default: "floor", aten.ceil.default: "ceil", aten.round.default: "round",
    aten.sign.default: "sign", aten.bitwise_not.default: "not", aten.isnan.default: "isnan",
    aten.isinf.default: "isinf",
}
_BINARY = {
    aten.mul.Tensor: "mul", aten.mul.Scalar: "mul", aten.div.Tensor: "div", aten.div.Scalar: "div",
    aten.maximum.default: "max", aten.minimum.default: "min", aten.atan2.default: "atan2",
    aten.fmod.Tensor: "rem", aten.fmod.Scalar: "rem", aten.pow.Tensor_Tensor: "pow",
    aten.pow.Scalar: "pow",
    aten.bitwise_and.Tensor: "and", aten.bitwise_and.Scalar: "and",
    aten.bitwise_or.Tensor: "or", aten.bitwise_or.Scalar: "or",
    aten.bitwise_xor.Tensor: "xor", aten.bitwise_xor.Scalar: "xor",
}
_COMPARE = {
    aten.eq.Tensor: "eq", aten.eq.Scalar: "eq", aten.ne.Tensor: "ne", aten.ne.Scalar: "ne",
    aten.lt.Tensor: "lt", aten.lt.Scalar: "lt", aten.le.Tensor: "le", aten.le.Scalar: "le",
    aten.gt.Tensor: "gt", aten.gt.Scalar: "gt", aten.ge.Tensor: "ge", aten.ge.Scalar: "ge",
}
_LOGICAL = {
    aten.logical_and.default: "and", aten.logical_or.default: "or", aten.logical_xor.default: "xor",
}
# Ops whose Stitch form rejects bool operands (docs/graph-ir.md: arithmetic rejects bool).
_ARITHMETIC = {"neg", "abs", "relu", "sign", "mul", "div", "max", "min", "rem", "pow", "add", "sub"}
# Ops that keep an integer input as it is (PyTorch returns it unchanged).
_INTEGER_IDENTITY = {"floor", "ceil", "round"}


def _refuse_bool_arithmetic(node):
    if meta(node).dtype is torch.bool:
        return f"{node.target} on bool"
    return None


def _unary(op):
    def lower(g, out, base, x):
        if op in _INTEGER_IDENTITY and not out.dtype.is_floating_point:
            return x
        if op in ("isnan", "isinf"):
            return elementwise(g, op, [x], out.dtype, compute=compute_dtype(x.dtype), base=base)
        return elementwise(g, op, [x], out.dtype, base=base)

    return lower


def _binary(op):
    def lower(g, out, base, a, b):
        return elementwise(g, op, [a, b], out.dtype, base=base)

    return lower


def _compare(op):
    def lower(g, out, base, a, b):
        compute = torch.result_type(probe(a), probe(b))
        return elementwise(g, op, [a, b], out.dtype, compute=compute_dtype(compute), base=base)

    return lower


def _logical(op):
    def lower(g, out, base, a, b):
        return elementwise(g, op, [a, b], out.dtype, compute=torch.bool, base=base)

    return lower


for _target, _op in _UNARY.items():
    lowers(_target, refuse=_refuse_bool_arithmetic if _op in _ARITHMETIC else None)(_unary(_op))
for _target, _op in _BINARY.items():
    lowers(_target, refuse=_refuse_bool_arithmetic if _op in _ARITHMETIC else None)(_binary(_op))
for _target, _op in _COMPARE.items():
    lowers(_target)(_compare(_op))
for _target, _op in _LOGICAL.items():
    lowers(_target)(_logical(_op))


@lowers(aten.logical_not.default)
def _logical_not(g, out, base, x):
    return elementwise(g, "not", [x], out.dtype, compute=torch.bool, base=base)


def _add_sub(op):
    def lower(g, out, base, a, b, *, alpha=1):
        if alpha != 1:
            b = elementwise(g, "mul", [b, alpha], out.dtype) if isinstance(b, Value) else b * alpha
        return elementwise(g, op, [a, b], out.dtype, base=base)

    return lower


lowers(aten.add.Tensor, aten.add.Scalar, refuse=_refuse_bool_arithmetic)(_add_sub("add"))
lowers(aten.sub.Tensor, aten.sub.Scalar, refuse=_refuse_bool_arithmetic)(_add_sub("sub"))


@lowers(aten.rsub.Tensor, aten.rsub.Scalar, refuse=_refuse_bool_arithmetic)
def _rsub(g, out, base, a, b, *, alpha=1):
    if alpha != 1:
        a = elementwise(g, "mul", [a, alpha], out.dtype)
    return elementwise(g, "sub", [b, a], out.dtype, base=base)


def _refuse_div_mode(node):
    mode = node.kwargs.get("rounding_mode")
    if mode is None or (mode == "trunc" and not meta(node).dtype.is_floating_point):
        return None
    return f"div with rounding_mode={mode!r} on {meta(node).dtype}"


@lowers(aten.div.Tensor_mode, aten.div.Scalar_mode, refuse=_refuse_div_mode)
def _div_mode(g, out, base, a, b, *, rounding_mode=None):
    # Stitch's integer division truncates (docs/semantics.md): rounding_mode="trunc".
    return elementwise(g, "div", [a, b], out.dtype, base=base)


@lowers(aten.pow.Tensor_Scalar, refuse=_refuse_bool_arithmetic)
def _pow_scalar(g, out, base, x, e):
    compute = compute_dtype(out.dtype)
    if not compute.is_floating_point:
        return elementwise(g, "pow", [x, e], out.dtype, base=base)
    x = cast(g, x, compute)
    # The exponents PyTorch's CPU kernel computes without pow (same roundings).
    if e == 0:
        y = constant(g, 1, compute, x.shape)
    elif e == 1:
        y = x
    elif e == 2:
        y = elementwise(g, "mul", [x, x], compute, base=base)
    elif e == 3:
        y = elementwise(g, "mul", [elementwise(g, "mul", [x, x], compute), x], compute, base=base)
    elif e == 0.5:
        y = elementwise(g, "sqrt", [x], compute, base=base)
    elif e == -0.5:
        y = elementwise(g, "rsqrt", [x], compute, base=base)
    elif e == -1:
        y = elementwise(g, "reciprocal", [x], compute, base=base)
    elif e == -2:
        y = elementwise(g, "reciprocal", [elementwise(g, "mul", [x, x], compute)], compute, base=base)
    else:
        y = elementwise(g, "pow", [x, e], compute, base=base)
    return cast(g, y, out.dtype)


@lowers(aten.where.self)
def _where(g, out, base, c, a, b):
    compute = out.dtype
    c = cast(g, c, torch.bool) if isinstance(c, Value) else constant(g, c, torch.bool)
    a = cast(g, a, compute) if isinstance(a, Value) else constant(g, a, compute)
    b = cast(g, b, compute) if isinstance(b, Value) else constant(g, b, compute)
    shape = broadcast_shape([c, a, b])
    return g.op(base, f"select({c.name}, {a.name}, {b.name})", compute, shape)


def _clamp_between(g, out, base, x, lo, hi):
    if lo is not None and hi is not None:
        return elementwise(g, "clamp", [x, lo, hi], out.dtype, base=base)
    if lo is not None:
        return elementwise(g, "max", [x, lo], out.dtype, base=base)
    if hi is not None:
        return elementwise(g, "min", [x, hi], out.dtype, base=base)
    return x


@lowers(aten.clamp.default, aten.clamp.Tensor, refuse=_refuse_bool_arithmetic)
def _clamp(g, out, base, x, min=None, max=None):
    return _clamp_between(g, out, base, x, min, max)


@lowers(aten.clamp_min.default, aten.clamp_min.Tensor, refuse=_refuse_bool_arithmetic)
def _clamp_min(g, out, base, x, min):
    return _clamp_between(g, out, base, x, min, None)


@lowers(aten.clamp_max.default, aten.clamp_max.Tensor, refuse=_refuse_bool_arithmetic)
def _clamp_max(g, out, base, x, max):
    return _clamp_between(g, out, base, x, None, max)


@lowers(aten.hardtanh.default, refuse=_refuse_bool_arithmetic)
def _hardtanh(g, out, base, x, min_val=-1.0, max_val=1.0):
    return _clamp_between(g, out, base, x, min_val, max_val)


@lowers(aten.gelu.default)
def _gelu(g, out, base, x, *, approximate="none"):
    compute = compute_dtype(out.dtype)
    y = g.op(base, f'gelu({cast(g, x, compute).name}, approximate="{approximate}")', compute, x.shape)
    return cast(g, y, out.dtype)


@lowers(aten.silu.default)
def _silu(g, out, base, x):
    compute = compute_dtype(out.dtype)
    return cast(g, g.op(base, f"silu({cast(g, x, compute).name})", compute, x.shape), out.dtype)


# Casts, copies and constants ---------------------------------------------------------


def _refuse_device_change(node):
    device = node.kwargs.get("device")
    x = meta(node.args[0]) if node.args and isinstance(node.args[0], torch.fx.Node) else None
    if device is not None and x is not None and torch.device(device) != x.device:
        return f"a copy from {x.device} to {device}"
    return None


@lowers(aten._to_copy.default, refuse=_refuse_device_change)
def _to_copy(g, out, base, x, **kwargs):
    return cast(g, x, out.dtype)


@lowers(torch.ops.prims.convert_element_type.default)
def _convert(g, out, base, x, dtype):
    return cast(g, x, out.dtype)


@lowers(aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default)
def _identity(g, out, base, x, *args, **kwargs):
    # Values are immutable in a partition (AOTAutograd functionalised the graph), so a
    # copy is the value itself.
    return x


@lowers(aten.full.default)
def _full(g, out, base, size, fill_value, **kwargs):
    return constant(g, fill_value, out.dtype, out.shape)


@lowers(aten.full_like.default)
def _full_like(g, out, base, x, fill_value, **kwargs):
    return constant(g, fill_value, out.dtype, out.shape)


@lowers(aten.new_full.default)
def _new_full(g, out, base, x, size, fill_value, **kwargs):
    return constant(g, fill_value, out.dtype, out.shape)


@lowers(aten.scalar_tensor.default)
def _scalar_tensor(g, out, base, value, **kwargs):
    return constant(g, value, out.dtype, ())


def _filled_with(value):
    def lower(g, out, base, *args, **kwargs):
        return constant(g, value, out.dtype, out.shape)

    return lower


lowers(aten.zeros.default, aten.zeros_like.default, aten.new_zeros.default)(_filled_with(0))
lowers(aten.ones.default, aten.ones_like.default, aten.new_ones.default)(_filled_with(1))


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(g, out, base, *args, **kwargs):
    if len(args) == 1:
        start, end, step = 0, args[0], 1
    else:
        start, end = args[0], args[1]
        step = args[2] if len(args) > 2 else kwargs.get("step", 1)
    n = out.shape[0]
    index = g.op(base + "_index", f"iota(shape=[{n}], axis=0, dtype=i64)", torch.int64, (n,))
    # PyTorch's CPU kernel computes start + i * step in the accumulation type.
    compute = torch.float64 if out.dtype.is_floating_point else torch.int64
    index = cast(g, index, compute)
    if step != 1:
        index = elementwise(g, "mul", [index, step], compute)
    if start != 0:
        index = elementwise(g, "add", [index, start], compute)
    return cast(g, index, out.dtype)
