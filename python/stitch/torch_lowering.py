"""ATen ops to Stitch graph text (docs/torch.md).

One partition of a PyTorch FX graph (core ATen ops, after AOTAutograd) becomes one
`.stitch` graph. `lowering_refusal(node)` says, from the node alone, whether it can be
lowered (the partitioner asks it); `lower_partition(gm, values, name)` writes the text,
given every node's value for one set of input shapes (fake tensors, so every extent and
every view's size is a plain int: a partition is specialised per input shapes).

PyTorch promotes dtypes implicitly and computes half-precision math in f32; Stitch does
neither (docs/graph-ir.md), so the lowering inserts the casts: operands are cast to the
dtype PyTorch computes in, and f16/bf16 arithmetic is done in f32 and rounded once per op,
as PyTorch's CPU kernels do.
"""

import math
import operator

import torch

STITCH_DTYPES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int8: "i8",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}
_HALVES = (torch.float16, torch.bfloat16)
# Words the text format reserves (src/ir/parser.cpp): never a value's name.
_RESERVED = {"return", "inf", "nan"}


class Value:
    """A tensor value of the graph being written: its name, dtype and static shape."""

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)


class Outputs:
    """A node with several results (native_layer_norm, split): each written when used."""

    def __init__(self, makers):
        self._makers = makers
        self._made = {}

    def __getitem__(self, i):
        if i not in self._made:
            self._made[i] = self._makers[i]()
        return self._made[i]


class GraphText:
    """The `.stitch` text of one graph, written statement by statement."""

    def __init__(self, name):
        self.name = name
        self.params = []
        self.lines = []
        self._taken = set()

    def fresh(self, base):
        base = base if base not in _RESERVED else base + "_"
        name, i = base, 1
        while name in self._taken:
            name, i = f"{base}_{i}", i + 1
        self._taken.add(name)
        return name

    def param(self, base, dtype, shape):
        v = Value(self.fresh(base), dtype, shape)
        self.params.append(f"{v.name}: {_type_text(dtype, v.shape)}")
        return v

    def op(self, base, call, dtype, shape):
        v = Value(self.fresh(base), dtype, shape)
        self.lines.append(f"  {v.name} = {call}")
        return v

    def text(self, outputs):
        head = f"graph {self.name}({', '.join(self.params)}) {{"
        return "\n".join([head, *self.lines, f"  return {', '.join(v.name for v in outputs)}", "}", ""])


def _type_text(dtype, shape):
    return f"{STITCH_DTYPES[dtype]}[{', '.join(str(d) for d in shape)}]"


def ints(xs):
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def number(x, dtype):
    """A Python number as a literal of `dtype` (the text format rounds it to the dtype)."""
    if dtype.is_floating_point:
        x = float(x)
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return repr(x)
    if dtype is torch.bool:
        return "true" if x else "false"
    return str(int(x))


def constant(g, x, dtype, shape=()):
    return g.op("constant", f"constant(value={number(x, dtype)}, shape={ints(shape)}, "
                f"dtype={STITCH_DTYPES[dtype]})", dtype, shape)


def cast(g, v, dtype):
    if v.dtype == dtype:
        return v
    return g.op(v.name + "_" + STITCH_DTYPES[dtype], f"cast({v.name}, to={STITCH_DTYPES[dtype]})", dtype, v.shape)


def compute_dtype(dtype):
    """The dtype PyTorch's CPU kernels do arithmetic in for a result of `dtype`."""
    return torch.float32 if dtype in _HALVES else dtype


def probe(x):
    """Something torch.result_type promotes like the operand x (a Value or a number)."""
    if isinstance(x, Value):
        return torch.empty(() if not x.shape else (0,), dtype=x.dtype, device="meta")
    return x


def broadcast_shape(operands):
    shapes = [x.shape for x in operands if isinstance(x, Value)]
    return tuple(torch.broadcast_shapes(*shapes)) if shapes else ()


def elementwise(g, op, operands, out_dtype, compute=None, base=None):
    """op(operands) with each operand cast to `compute` (default: the dtype PyTorch
    computes `out_dtype` in) and the result cast to out_dtype. Numbers become literals."""
    compute = compute or compute_dtype(out_dtype)
    shape = broadcast_shape(operands)
    half = next((x.dtype for x in operands if isinstance(x, Value) and x.dtype in _HALVES), None)
    args = []
    for x in operands:
        if isinstance(x, Value):
            args.append(cast(g, x, compute).name)
        elif compute is torch.bool:
            args.append(constant(g, x, compute).name)
        else:
            if half is not None and op not in _SCALAR_IN_OPMATH and not isinstance(x, bool):
                # PyTorch rounds a number to the f16/bf16 operand's dtype first (measured:
                # add, sub, comparisons, fmod, atan2, pow), except mul and div.
                x = torch.tensor(x, dtype=half).item()
            args.append(number(x, compute))
    if not any(isinstance(x, Value) for x in operands):
        raise AssertionError(f"stitch: {op} lowered without a tensor operand")
    result_dtype = torch.bool if op in _COMPARISONS else compute
    v = g.op(base or op, f"{op}({', '.join(args)})", result_dtype, shape)
    return cast(g, v, out_dtype)


_COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf"}
# The ops whose number operand PyTorch's CPU kernels keep in float for f16/bf16 tensors.
_SCALAR_IN_OPMATH = {"mul", "div"}

# What each ATen op is written as, and a check of what the node alone can tell.
LOWERINGS = {}
REFUSALS = {}


def lowers(*targets, refuse=None):
    def register(fn):
        for t in targets:
            LOWERINGS[t] = fn
            if refuse is not None:
                REFUSALS[t] = refuse
        return fn

    return register


def meta(node):
    return node.meta.get("val")


def lowering_refusal(node):
    """Why `node` cannot run in a Stitch partition, or None when it can."""
    if node.op != "call_function":
        return "not a call"
    if node.target is operator.getitem:
        producer = node.args[0]
        if not isinstance(producer, torch.fx.Node) or producer.target not in LOWERINGS:
            return "getitem of an op Stitch does not lower"
        return lowering_refusal(producer)
    if node.target not in LOWERINGS:
        return f"no lowering for {node.target}"
    for v in _tensor_metas(node):
        if v.dtype not in STITCH_DTYPES:
            return f"dtype {v.dtype} has no Stitch dtype with a numpy equivalent"
        if v.layout is not torch.strided or v.is_sparse:
            return "not a strided tensor"
        if v.device.type not in ("cpu", "cuda"):
            return f"device {v.device}"
    refuse = REFUSALS.get(node.target)
    return refuse(node) if refuse else None


def _tensor_metas(node):
    def metas(x):
        if isinstance(x, torch.Tensor):
            yield x
        elif isinstance(x, (tuple, list)):
            for y in x:
                yield from metas(y)

    yield from metas(meta(node))
    for a in node.all_input_nodes:
        yield from metas(meta(a))


# Views that keep a contiguous tensor's memory as it is: a parameter read only through
# one of them is declared in the view's shape (the caller passes the same memory).
_RESHAPES = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default, torch.ops.aten.reshape.default)


def _declared_shape(node, values):
    """The shape a tensor placeholder is declared with: that of the one reshape all its
    users apply (a matrix product's [B*T, C] result read as [B, T, C], so that the
    graph's shapes need no product of symbols), else its own."""
    shapes = {tuple(values[u].shape) if u.target in _RESHAPES else None for u in node.users}
    if len(shapes) == 1 and None not in shapes:
        return shapes.pop()
    return tuple(values[node].shape)


class StoredShape(tuple):
    """A parameter's declared shape when the argument is a permute of a dense tensor:
    the shape of the memory as it lies (`order`, the argument's axes outermost first),
    which the caller passes as it is; the graph transposes it back."""

    def __new__(cls, shape, order):
        stored = super().__new__(cls, shape)
        stored.order = order
        return stored


def dense_order(t):
    """The axes of `t` outermost first in memory when `t` is a permute of a dense
    tensor that keeps the last axis innermost (the heads of attention moved), else None
    (contiguous, not dense, or the innermost axis moved: a kernel would read it in
    strides, and PyTorch's copy was the faster way to transpose, docs/torch.md)."""
    if t.dim() < 2 or t.is_contiguous() or t.stride(-1) != 1:
        return None
    order = tuple(sorted(range(t.dim()), key=lambda a: -t.stride(a)))
    if order[-1] != t.dim() - 1:
        return None
    return order if t.permute(order).is_contiguous() else None


def _hint(d):
    """A size or stride as an int: a symbol's value in the example it was traced with."""
    return int(d.node.hint) if isinstance(d, torch.SymInt) else int(d)


def output_order(t):
    """The axes of `t`, the value a graph's trace gave an output, outermost first in
    memory, when it is a permute of a dense tensor but not contiguous (the gradient of
    attention's heads, laid out as the heads' input was); else None. Consumers may view
    such an output in ways only its traced strides allow, so the partition writes it
    laid out that way."""
    if not isinstance(t, torch.Tensor) or t.dim() < 2:
        return None
    sizes = [_hint(d) for d in t.shape]
    strides = [_hint(s) for s in t.stride()]
    order = tuple(sorted(range(t.dim()), key=lambda a: (-strides[a], a)))
    expected = 1
    for a in reversed(order):
        if sizes[a] != 1 and strides[a] != expected:
            return None
        expected *= sizes[a]
    moved = [a for a in order if sizes[a] != 1]
    if moved == sorted(moved):
        return None  # contiguous but for axes of extent 1
    # Axes of extent 1 stay where they are; the others take the free places in order.
    rest = iter(moved)
    return tuple(a if sizes[a] == 1 else next(rest) for a in range(t.dim()))


def lower_partition(gm, values, name, permuted=True):
    """The text of the graph `name` computing gm's outputs; for each of gm's
    placeholders its declared shape if it is a graph parameter (a tensor, read as a
    dense row-major array of that shape) or None if its value is baked in (an int); and
    for each output the order its memory is written in (output_order: the graph
    returns it transposed to that order, the caller permutes it back) or None.
    `values` maps each node of gm to its value for the shapes being compiled. With
    `permuted`, an argument that is a permute of a dense tensor is declared as its
    memory lies (a StoredShape) and transposed in the graph, so no copy makes it
    contiguous."""
    g = GraphText(name)
    env = {}
    declared = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            v = values[node]
            order = dense_order(v) if permuted and isinstance(v, torch.Tensor) else None
            if order is not None:
                shape = StoredShape((v.shape[a] for a in order), order)
                stored = g.param(node.name, v.dtype, shape)
                env[node] = transpose(g, stored, [order.index(a) for a in range(len(order))], node.name)
                declared.append(shape)
            elif isinstance(v, torch.Tensor):
                shape = _declared_shape(node, values)
                env[node] = g.param(node.name, v.dtype, shape)
                declared.append(shape)
            else:
                env[node] = v
                declared.append(None)
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, lambda n: env[n])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
            if node.target is operator.getitem:
                env[node] = args[0][args[1]]
            else:
                env[node] = LOWERINGS[node.target](g, values[node], node.name, *args, **kwargs)
        elif node.op == "output":
            outs = node.args[0]
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            orders = [output_order(o.meta.get("val")) for o in outs]
            results = [env[o] if order is None else transpose(g, env[o], order, o.name + "_laid")
                       for o, order in zip(outs, orders)]
            return g.text(results), declared, orders
        else:
            raise AssertionError(f"stitch: a partition holds a {node.op} node")
    raise AssertionError("stitch: a partition without an output")


def reduction_axes(dims, rank):
    """Normalised reduction axes; None means every axis (PyTorch: dim None or [])."""
    if rank == 0:
        return []
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return None
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % rank for d in dims})


def reduce(g, op, x, axes, keepdim, dtype, base):
    """op over axes of x cast to dtype (argmax/argmin: of x itself, giving i64)."""
    axes_text = "" if axes is None else f", axes={ints(axes)}"
    reduced = range(len(x.shape)) if axes is None else axes
    shape = tuple(1 if i in reduced else d for i, d in enumerate(x.shape) if keepdim or i not in reduced)
    keep = "true" if keepdim else "false"
    if op in ("argmax", "argmin"):
        return g.op(base, f"{op}({x.name}{axes_text}, keepdims={keep})", torch.int64, shape)
    return g.op(base, f"{op}({cast(g, x, dtype).name}{axes_text}, keepdims={keep})", dtype, shape)




def reshape(g, x, shape):
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return g.op(x.name + "_reshaped", f"reshape({x.name}, shape={ints(shape)})", x.dtype, shape)


def transpose(g, x, perm, base):
    perm = [p % len(x.shape) for p in perm]
    if perm == sorted(perm):
        return x
    shape = tuple(x.shape[p] for p in perm)
    return g.op(base, f"transpose({x.name}, perm={ints(perm)})", x.dtype, shape)


# The op table is filled by the modules below, one per kind of op.
from . import (torch_lowering_attention, torch_lowering_layout, torch_lowering_pointwise,  # noqa: E402,F401
               torch_lowering_reductions)
