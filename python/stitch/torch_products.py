"""Which matrix products join Stitch's partitions: measured, per problem (docs/torch.md,
Matrix products).

Both PyTorch and Stitch call a GEMM library for a matrix product (PyTorch's wheel MKL,
Stitch oneDNN's sgemm), and which one is faster depends on the machine and the shape.
Under options={"dots": "auto"} the backend times both on the product's own shapes,
once per process, and lets the product join a partition where Stitch's call is faster
by a margin; a product in a partition also takes its bias, activation and residual as
the dot's epilogue and no longer cuts the graph. Each new problem costs a compile of
its dot and a few calls of each (about a second).
"""

import math
import statistics
import time

import torch

import stitch

aten = torch.ops.aten

# Stitch's dot must take at most this fraction of PyTorch's time (medians) to be
# chosen: within it the two are level and PyTorch keeps the product.
MARGIN = 0.97
_ROUNDS = 5           # timed calls of each, alternating
_BUDGET_S = 0.5       # a problem's measurement stops early past this many seconds

# (op, shapes, b transposed, dtype) -> whether Stitch's dot was faster
_choices = {}
# The measurements made, for tests and the docs: key -> (torch seconds, stitch seconds)
measurements = {}

_TRANSPOSES = {aten.t.default, aten.transpose.int, aten.permute.default}


def _swaps_last_two(node):
    """Whether node is a transpose of its operand's last two axes only (a linear
    layer's weight as `t(w)`), which Stitch's gemm reads with its transpose flag."""
    if not isinstance(node, torch.fx.Node) or node.target not in _TRANSPOSES:
        return False
    rank = len(node.meta["val"].shape)
    if rank < 2:
        return False
    if node.target is aten.t.default:
        return rank == 2
    if node.target is aten.transpose.int:
        return sorted(d % rank for d in node.args[1:3]) == [rank - 2, rank - 1]
    perm = [d % rank for d in node.args[1]]
    return perm == list(range(rank - 2)) + [rank - 1, rank - 2]


def problem(node):
    """The key of a matrix product node: op, operand shapes, whether B is a transposed
    weight, dtype."""
    operands = node.args[1:3] if node.target is aten.addmm.default else node.args[:2]
    shapes = tuple(tuple(int(d) for d in a.meta["val"].shape) for a in operands)
    return (str(node.target), shapes, _swaps_last_two(operands[1]), node.meta["val"].dtype)


def _graph_text(op, shapes, transposed, dtype):
    t = {torch.float32: "f32", torch.float64: "f64"}[dtype]
    (a, b) = shapes
    stored_b = b[:-2] + (b[-1], b[-2]) if transposed else b
    params = [f"a: {t}[{', '.join(map(str, a))}]", f"w: {t}[{', '.join(map(str, stored_b))}]"]
    lines = []
    if transposed:
        perm = list(range(len(b) - 2)) + [len(b) - 1, len(b) - 2]
        lines.append(f"  b = transpose(w, perm=[{', '.join(map(str, perm))}])")
    operand = "b" if transposed else "w"
    lines.append(f"  y = dot(a, {operand})")
    result = "y"
    if op == str(aten.addmm.default):
        params.append(f"bias: {t}[{b[-1]}]")
        lines.append("  r = add(y, bias)")
        result = "r"
    return f"graph product({', '.join(params)}) {{\n" + "\n".join(lines) + f"\n  return {result}\n}}\n"


def _measure(key):
    op, shapes, transposed, dtype = key
    (a_shape, b_shape) = shapes
    a = torch.randn(a_shape, dtype=dtype)
    w = torch.randn(b_shape[:-2] + (b_shape[-1], b_shape[-2]) if transposed else b_shape, dtype=dtype)
    b = w.transpose(-2, -1) if transposed else w
    out_shape = torch.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1])
    out = torch.empty(out_shape, dtype=dtype)
    bias = torch.randn(b_shape[-1], dtype=dtype)
    exe = stitch.compile(stitch.parse(_graph_text(op, shapes, transposed, dtype), "product.stitch").graphs["product"],
                         backend="cpu", planner="stitch")
    pointers = [a.data_ptr(), w.data_ptr()] + ([bias.data_ptr()] if op == str(aten.addmm.default) else [])
    outputs = [out.data_ptr()]
    if op == str(aten.addmm.default):
        def in_torch():
            torch.addmm(bias, a, b, out=out)
    elif op == str(aten.bmm.default):
        def in_torch():
            torch.bmm(a, b, out=out)
    else:
        def in_torch():
            torch.mm(a, b, out=out)

    def in_stitch():
        exe.run_at(pointers, outputs, None)

    medians = alternating_medians({"torch": in_torch, "stitch": in_stitch}, _ROUNDS, _BUDGET_S)
    return medians["torch"], medians["stitch"]


def alternating_medians(calls, rounds, budget_s):
    """Each call's median time in seconds: one untimed call each (pages, packing
    buffers, the threads), then up to `rounds` rounds calling each once, the order
    alternating, stopping after three once `budget_s` has passed."""
    for call in calls.values():
        call()
    names = list(calls)
    seconds = {name: [] for name in names}
    started = time.perf_counter()
    for r in range(rounds):
        for name in (names[::-1] if r % 2 else names):
            start = time.perf_counter()
            calls[name]()
            seconds[name].append(time.perf_counter() - start)
        if time.perf_counter() - started > budget_s and r >= 2:
            break
    return {name: statistics.median(times) for name, times in seconds.items()}


def stitch_is_faster(node):
    """Whether Stitch's dot computes this product faster than PyTorch on this machine
    (measured on first sight of its problem). Only f32 and f64 products on the CPU are
    asked: the others are refused before."""
    return measured_choice(problem(node), _choices, measurements, _measure, MARGIN, grad=False)


def measured_choice(key, choices, measurements, measure, margin, grad):
    """choices[key], measured on first sight: measure(key) gives (seconds of the
    incumbent, seconds of the challenger), kept in measurements[key]; the challenger
    is chosen where it takes at most `margin` of the incumbent's time. `grad`: whether
    the measurement runs with autograd on."""
    choice = choices.get(key)
    if choice is None:
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        # Inside torch.compile the backend runs under a fake tensor mode: real tensors here.
        with unset_fake_temporarily(), torch.set_grad_enabled(grad):
            incumbent_s, challenger_s = measure(key)
        measurements[key] = (incumbent_s, challenger_s)
        choice = choices[key] = challenger_s <= margin * incumbent_s
    return choice


def reset():
    """Forgets every measurement (tests)."""
    _choices.clear()
    measurements.clear()


_storage_use_count = torch._C._storage_Use_Count
_KEPT_OUTPUTS = 2
# Outputs below this size are left to PyTorch's allocator, which hands back the block
# just freed, still in cache. Kept, a Llama decoder's [512, 256] and [512, 688]
# outputs gave a training step 0.97x as fast in one run of 21 alternating steps; the
# larger products' gain is measured alone (docs/torch.md, What runs in PyTorch).
KEPT_MIN_BYTES = 4 << 20


class KeptProduct(torch.nn.Module):
    """A matrix product PyTorch runs between partitions (mm, addmm, bmm on the CPU;
    options={"keep_products": True}) with an output of KEPT_MIN_BYTES or more, written
    into one of its last two outputs that nothing holds any more, as the partitions'
    own outputs are and as Inductor writes its products into its buffers (`out=`).
    Alone, `mm` of [1568, 768] by [768, 3072] took 54.2 ms into new memory against
    48.6 ms into reused memory (docs/torch.md). A kept output is known free by its
    storage's use count, as in _run_at."""

    def __init__(self, op):
        super().__init__()
        self.op = op        # torch.mm, torch.addmm or torch.bmm
        self.kept = []      # (tensor, storage, use count when only this list held it)

    def forward(self, *args, **kwargs):
        a, b = args[-2], args[-1]
        if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in args):
            return self.op(*args, **kwargs)  # out= does not take part in autograd
        shape = (*a.shape[:-1], b.shape[-1])
        if math.prod(shape) * a.element_size() < KEPT_MIN_BYTES:
            return self.op(*args, **kwargs)
        kept = None
        for i in range(len(self.kept) - 1, -1, -1):  # the newest first
            t, storage, count = self.kept[i]
            if _storage_use_count(storage) == count and t.shape == shape and t.dtype == a.dtype:
                kept = self.kept.pop(i)
                break
        if kept is None:
            t = torch.empty(shape, dtype=a.dtype)
            storage = t.untyped_storage()._cdata
            kept = (t, storage, _storage_use_count(storage))
        self.op(*args, **kwargs, out=kept[0])
        self.kept.append(kept)
        del self.kept[:-_KEPT_OUTPUTS]
        return kept[0].detach()

    # The FX module calls it directly, as _StitchPartition.
    __call__ = forward


KEPT_PRODUCT_OPS = {aten.mm.default: torch.mm, aten.addmm.default: torch.addmm, aten.bmm.default: torch.bmm}
