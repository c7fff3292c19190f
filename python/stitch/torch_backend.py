"""`torch.compile(model, backend="stitch")` (docs/torch.md).

Dynamo hands the backend an FX graph; AOTAutograd turns it into core ATen ops (and, for
training, a forward and a backward graph). The ops Stitch lowers (torch_lowering.py) are
grouped into maximal partitions, each compiled into one Stitch executable per input
shapes and dtypes; everything else (matrix products above all: PyTorch's BLAS is what
Inductor calls too) runs in PyTorch between them.

    import torch, stitch
    fast = torch.compile(model, backend="stitch")
    with torch.inference_mode():
        y = fast(x)
    print(stitch.torch_backend.last_stats())      # partitions, kernels, what PyTorch ran

Training: the forward and the backward graph are partitioned and compiled alike; the
min-cut partitioner decides what the forward saves and what the backward recomputes.
"""

import collections
import contextlib
import functools
import operator
import os
import time
import warnings

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.multiprocessing.reductions import StorageWeakRef
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

import stitch
from stitch._stitch import PlainCall

from .torch_lowering import LOWERINGS, lower_partition, lowering_refusal
from .torch_lowering_attention import ATTENTION_OPS
from .torch_lowering_layout import MATRIX_PRODUCTS
from . import torch_attention_choice, torch_products, torch_report
from .torch_attention import fuse_attention
from .torch_attention_dynamo import fuse_attention_before_autograd
from .torch_symbolic import Shaped, is_dynamic, lower_symbolic
from .torch_partitions import VIEWS, fill_per_user, private_views_for_clones, pull_reductions, split_bias_adds

# Whether matrix products join Stitch's partitions unless options={"dots": ...} says:
# True, False, or "auto", where each CPU product's problem is timed under both and
# joins where Stitch's dot is faster (torch_products.py). Off: on the machines measured
# the two GEMMs are level (docs/torch.md, Matrix products).
DOTS_BY_DEFAULT = False
# Whether CPU matrix products PyTorch runs write into kept outputs (torch_products.
# KeptProduct) unless options={"keep_products": ...} says. Off: alone, a large product
# ran faster into reused memory, but alternating model steps with and without were
# level within this VM's noise (docs/torch.md, What runs in PyTorch).
KEEP_PRODUCTS_BY_DEFAULT = False
# Whether fused attention runs as Stitch's attention op rather than PyTorch's kernel
# unless options={"stitch_attention": ...} says (docs/torch.md, Attention).
STITCH_ATTENTION_BY_DEFAULT = False

aten = torch.ops.aten

# Ops that compute nothing in Stitch either: a partition of only these is left to
# PyTorch, unless a clone in it moves a layout (_moves_layout).
_NOT_COMPUTE = VIEWS | {
    aten.clone.default, aten.lift_fresh_copy.default, aten.split.Tensor,
    aten.split_with_sizes.default, aten.unbind.int,
}


class PartitionStats:
    """One Stitch partition of a compiled graph."""

    def __init__(self, name, ops, backend):
        self.name = name
        self.ops = ops                  # the ATen ops it holds, in graph order
        self.backend = backend          # "cpu" or "cuda"
        self.kernel_count = None        # of the latest specialisation compiled
        self.plan = None
        self.text = None                # the latest generated .stitch text
        self.specialisations = 0        # executables compiled: per input shapes, or one symbolic
        self.symbolic = False           # whether one executable takes every size (dynamic shapes)
        self.static_because = None      # under dynamic shapes, why it is compiled per shapes
        self.calls = 0
        # Within profiling(): seconds spent making arguments numpy arrays, in Stitch's
        # executable (binding, kernels), and wrapping results as tensors; calls timed.
        self.seconds = {"arguments": 0.0, "stitch": 0.0, "results": 0.0}
        self.timed_calls = 0
        self.fallback = None            # why PyTorch ran it instead, when it did
        self.stitch_fallback = ""       # Stitch's own fallback (a smaller fusion), if any
        # A partition of views and layout copies: seconds of Stitch's call and
        # PyTorch's, timed once (PyTorch runs it where faster).
        self.copies_timed = None
        self.report = None              # its graph's page under STITCH_TORCH_REPORT (torch_report.py)

    def __repr__(self):
        state = f"fallback: {self.fallback}" if self.fallback else f"kernels={self.kernel_count}"
        if self.copies_timed:
            stitch_s, torch_s = self.copies_timed
            state += f", copies {stitch_s * 1e3:.3f} ms in Stitch, {torch_s * 1e3:.3f} in PyTorch"
        return f"<{self.name}: {len(self.ops)} ops on {self.backend}, {state}, calls={self.calls}>"


class GraphStats:
    """What became of one graph the backend compiled."""

    def __init__(self, kind):
        self.kind = kind                # "inference", "forward" or "backward"
        self.partitions = []
        self.torch_ops = collections.Counter()   # ATen ops PyTorch runs, by name
        self.refusals = collections.Counter()    # why ops were not lowered, by reason
        self.attention = 0                       # attentions made one fused call (torch_attention.py)
        self.bias_adds = 0                       # addmm split into mm + an add in a partition

    @property
    def kernel_count(self):
        """Stitch kernels (and library calls) one call launches, over all partitions run so far."""
        return sum(p.kernel_count or 0 for p in self.partitions if not p.fallback)

    def __str__(self):
        lines = [f"{self.kind} graph: {len(self.partitions)} Stitch partitions, "
                 f"{self.kernel_count} kernels; PyTorch runs {sum(self.torch_ops.values())} ops"]
        for p in self.partitions:
            lines.append(f"  {p!r}")
        if self.torch_ops:
            lines.append("  in PyTorch: " + ", ".join(f"{op} x{n}" for op, n in self.torch_ops.most_common()))
        return "\n".join(lines)

    __repr__ = __str__


_stats = []
_profiling = False


@contextlib.contextmanager
def profiling():
    """Within it, each partition call adds where its time went to PartitionStats.seconds."""
    global _profiling
    previous, _profiling = _profiling, True
    try:
        yield
    finally:
        _profiling = previous


def last_stats():
    """Stats of the latest graph the backend compiled (None before any)."""
    return _stats[-1] if _stats else None


def all_stats():
    """Stats of every graph compiled since the process started or reset_stats()."""
    return list(_stats)


def reset_stats():
    _stats.clear()


@functools.lru_cache(maxsize=None)
def cuda_available():
    """Whether this Stitch build can compile for CUDA on this machine (asked once)."""
    return bool(stitch.cuda_available())


class _Support(OperatorSupportBase):
    def __init__(self, stats, dots, attention):
        self.stats = stats
        self.dots = dots  # whether matrix products join the partitions (the `dots` option: True, False, "auto")
        self.attention = attention  # whether fused attention does (`stitch_attention`)

    def is_node_supported(self, submodules, node):
        reason = self.refusal(node)
        if reason is not None and node.op == "call_function":
            self.stats.refusals[reason] += 1
        return reason is None

    def refusal(self, node):
        """Why PyTorch runs `node`, or None when Stitch can take it."""
        reason = lowering_refusal(node)
        if reason is None and node.target in MATRIX_PRODUCTS:
            if not self.dots:
                reason = "a matrix product (the dots option is off)"
            elif self.dots == "auto" and (_on_cuda(node) or not torch_products.stitch_is_faster(node)):
                reason = "a matrix product PyTorch computes faster here (measured)"
        if reason is None and not self.attention and node.target in ATTENTION_OPS:
            reason = "fused attention (the stitch_attention option is off)"
        if reason is None and _on_cuda(node):
            reason = _cuda_refusal(node)
        return reason


# What PyTorch runs on purpose (docs/torch.md, What runs in PyTorch): no warning.
_BY_DESIGN = set(MATRIX_PRODUCTS) | {
    aten.baddbmm.default, aten.scaled_dot_product_attention.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
    aten.sym_size.int, aten.sym_numel.default, aten.sym_stride.int,
}
_warned = set()  # the reasons warned about, once per process


def _warn_refusals(gm):
    """One warning per op (or dtype, device) Stitch cannot take, the first time a graph
    has it: that op runs in PyTorch and the graph is partitioned around it."""
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or node.target in _BY_DESIGN:
            continue
        if not isinstance(node.target, torch._ops.OpOverload):  # SymInt arithmetic
            continue
        reason = lowering_refusal(node)
        if reason is not None and reason not in _warned:
            _warned.add(reason)
            warnings.warn(f"stitch: PyTorch runs {node.target} ({reason}); the rest of the graph is "
                          "partitioned around it", stacklevel=2)


def _devices(node):
    metas = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    flat = [t for m in metas for t in (m if isinstance(m, (tuple, list)) else [m])]
    return {t.device for t in flat if isinstance(t, torch.Tensor)}


def _on_cuda(node):
    return any(d.type == "cuda" for d in _devices(node))


def _cuda_refusal(node):
    """Why Stitch cannot run a node that touches a CUDA tensor, or None: its CUDA back
    end runs on device 0, by address, so every tensor must be there."""
    if not cuda_available():
        return "a CUDA tensor, and this Stitch has no CUDA back end"
    devices = _devices(node)
    if any(d.type != "cuda" or (d.index or 0) != 0 for d in devices):
        return "a tensor on another device than cuda:0 beside a CUDA tensor (Stitch runs on device 0)"
    return None


_NOT_COMPUTE_NAMES = {str(op) for op in _NOT_COMPUTE}

# Whether a partition of only views and clones runs in Stitch (a copy into another
# layout: attention's heads); the benchmark turns it off to time PyTorch's copies beside it.
layout_copies = True

# Whether an addmm whose result a partition computes on becomes mm + add, the add in
# that partition (torch_partitions.split_bias_adds); the benchmark turns it off to time
# the switch.
split_bias = True


def _trim(partition):
    """Leaves trailing views to PyTorch; True when something worth a kernel is left."""
    nodes = partition.nodes
    changed = True
    while changed:
        changed = False
        for node in list(nodes):
            if node.target in VIEWS and all(u not in nodes for u in node.users):
                del nodes[node]
                changed = True
    return any(n.target in LOWERINGS and (n.target not in _NOT_COMPUTE or _moves_layout(n)) for n in nodes)


def _moves_layout(node):
    """A clone of a tensor that is not contiguous: a copy into another layout, which
    Stitch does in tiles (attention's heads, 0.3-0.6 of a copy's speed where
    PyTorch's copy ran at 0.06-0.1: docs/torch.md). A clone of a contiguous tensor
    is a plain copy, as fast in PyTorch."""
    if node.target is not aten.clone.default or not layout_copies:
        return False
    source = node.args[0].meta.get("val") if isinstance(node.args[0], torch.fx.Node) else None
    return isinstance(source, torch.Tensor) and not source.is_contiguous()


_graph_ids = iter(range(1 << 62))


def _host_backend(options):
    """The back end of the partitions of CPU tensors: options["backend"], "cpu" (the
    default) or "cuda", which compiles them for the CUDA back end and runs them through
    host memory (each call copies its inputs to the device and its outputs back): the
    model set's check of CUDA code on the simulated driver (docs/torch.md, CUDA), not a
    way to run faster."""
    choice = options.get("backend", "cpu")
    if choice not in ("cpu", "cuda"):
        raise ValueError(f'stitch: options["backend"] is {choice!r}; it takes "cpu" or "cuda"')
    if choice == "cuda" and not cuda_available():
        raise ValueError('stitch: options["backend"] is "cuda", and this Stitch cannot compile for CUDA here '
                         "(a build without the CUDA toolkit, or no driver and device; STITCH_CUDA_DRIVER may "
                         "name the simulated driver, docs/cuda-sim.md)")
    return choice


def _compile_graph(gm, kind, options, attention_before=0):
    """The graph AOTAutograd gives (kind: inference, forward or backward) as partitions;
    `attention_before` counts the attentions fused in Dynamo's graph before it."""
    stats = GraphStats(kind)
    _stats.append(stats)
    stats.attention = attention_before
    attention = options.get("attention", "auto")
    if attention:
        chosen = _measured(training=False) if attention == "auto" else None
        stats.attention += fuse_attention(gm, chosen)
    fill_per_user(gm)
    if layout_copies:
        private_views_for_clones(gm)
    graph_id = next(_graph_ids)
    dots = options.get("dots", DOTS_BY_DEFAULT)
    if dots not in (True, False, "auto"):
        raise ValueError(f'stitch: options["dots"] is {dots!r}; it takes True, False or "auto"')
    host_backend = _host_backend(options)
    keep_products = options.get("keep_products", KEEP_PRODUCTS_BY_DEFAULT)
    if keep_products not in (True, False):
        raise ValueError(f'stitch: options["keep_products"] is {keep_products!r}; it takes True or False')
    attention = bool(options.get("stitch_attention", STITCH_ATTENTION_BY_DEFAULT))
    support = _Support(stats, dots, attention)
    if split_bias:
        stats.bias_adds = split_bias_adds(gm, lambda n: support.refusal(n) is None)
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    _warn_refusals(gm)
    partitions = [p for p in partitioner.propose_partitions() if _trim(p)]
    partitions = [p for p in pull_reductions(gm, partitions) if _trim(p)]
    report = torch_report.graph_report(gm, graph_id, kind, partitions, support.refusal)
    if partitions:
        fuse_by_partitions(gm, [p.nodes for p in partitions], prefix="stitch_", always_return_tuple=True)
    for node in gm.graph.nodes:
        if node.op == "call_module" and node.target.startswith("stitch_"):
            sub = getattr(gm, node.target)
            ops = [str(n.target) for n in sub.graph.nodes if n.op == "call_function"]
            outputs = [n.meta.get("val") for n in _flat_output(sub)]
            on_cuda = any(isinstance(v, torch.Tensor) and v.device.type == "cuda" for v in outputs)
            device = "cuda" if on_cuda else host_backend
            pstats = PartitionStats(f"torch_g{graph_id}_{node.target}", ops, device)
            pstats.report = report
            stats.partitions.append(pstats)
            partition = _StitchPartition(sub, pstats, options)
            setattr(gm, node.target, partition)
            # Found in the instance's dict, the generated forward's `self.stitch_0`
            # skips nn.Module.__getattr__ (0.5 us a partition call).
            gm.__dict__[node.target] = partition
        elif node.op == "call_function" and node.target is not operator.getitem:
            stats.torch_ops[str(node.target)] += 1
            if not (keep_products and _keep_product_output(gm, node)):
                _as_method(node)
    gm.recompile()
    return _boxed(gm)


# The ops PyTorch runs between partitions, called as the Tensor methods they are:
# `x.view(s)` costs 1.0 us where `torch.ops.aten.view.default(x, s)` costs 2.1 (the
# OpOverload's Python wrapper), and a model block runs dozens of such views.
_METHODS = {
    aten.view.default: "view", aten.permute.default: "permute", aten.expand.default: "expand",
    aten.t.default: "t", aten.transpose.int: "transpose", aten.unsqueeze.default: "unsqueeze",
    aten.squeeze.dim: "squeeze", aten.select.int: "select", aten.split_with_sizes.default: "split_with_sizes",
    aten.split.Tensor: "split", aten.clone.default: "clone", aten.mm.default: "mm", aten.bmm.default: "bmm",
    aten.addmm.default: "addmm", aten.baddbmm.default: "baddbmm",
}


def _keep_product_output(gm, node):
    """A CPU matrix product PyTorch runs becomes a KeptProduct module, which writes
    into reused outputs; True if it did."""
    op = torch_products.KEPT_PRODUCT_OPS.get(node.target)
    val = node.meta.get("val")
    if op is None or not isinstance(val, torch.Tensor) or val.device.type != "cpu":
        return False
    name = f"stitch_product_{node.name}"
    gm.add_submodule(name, torch_products.KeptProduct(op))
    node.op, node.target = "call_module", name
    return True


def _as_method(node):
    method = _METHODS.get(node.target)
    if method is None:
        return
    node.op, node.target = "call_method", method


def _flat_output(gm):
    out = gm.graph.output_node().args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _boxed(gm):
    """gm's generated forward, called directly: a lazily compiled graph module's
    forward first recompiles and then goes through nn.Module's call (hooks, the
    wrapped call's error messages) every call, which cost more than the partition's
    call itself (docs/torch.md, Not yet)."""
    from torch._functorch.aot_autograd import make_boxed_func

    real_recompile = getattr(gm, "real_recompile", None)
    if real_recompile is not None:  # torch.fx's _LazyGraphModule
        real_recompile()
    return make_boxed_func(gm.forward)


def _propagate(gm, args):
    """Every node's value (fake tensors) for inputs shaped like args."""
    from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

    with unset_fake_temporarily(), FakeTensorMode(allow_non_fake_inputs=True):
        fakes = [torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
                 if isinstance(a, torch.Tensor) else torch.empty(a.shape, dtype=a.dtype, device=a.device)
                 if isinstance(a, Shaped) else a for a in args]
        interpreter = torch.fx.Interpreter(gm, garbage_collect_values=False)
        interpreter.run(*fakes)
        return dict(interpreter.env)


def _f32_intermediates(options):
    """Whether a partition's f16 and bf16 values stay in f32 between its ops
    (options["f32_intermediates"], on by default as in Inductor's kernels; docs/torch.md,
    Half precision between ops)."""
    value = options.get("f32_intermediates", True)
    if value not in (True, False):
        raise ValueError(f'stitch: options["f32_intermediates"] is {value!r}; it takes True or False')
    return value


# Executables by (text, back end, planner, f32 intermediates): a block repeated in a
# model compiles once.
_executables = {}


def _compile_text(text, name, backend, options):
    key = (text, backend, options.get("planner", "stitch"), _f32_intermediates(options))
    exe = _executables.get(key)
    if exe is None:
        module = stitch.parse(text, name + ".stitch")
        exe = stitch.compile(module.graphs[name], backend=backend, planner=key[2],
                             tune=bool(options.get("tune", False)), cache_dir=options.get("cache_dir", ""),
                             f32_intermediates=key[3])
        _executables[key] = exe
    return exe


def _dump(name, text):
    directory = torch_report.dump_directory()
    if directory:
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, name + ".stitch"), "w") as f:
            f.write(text)


class _Specialisation:
    __slots__ = ("exe", "params", "declared", "single", "devices", "device", "kept", "kept_at", "outputs", "symbolic",
                 "inverse", "plain")

    def __init__(self, exe, params, declared, single, devices, outputs, symbolic=None, inverse=None):
        self.exe = exe            # None: PyTorch runs the partition
        self.params = params      # which arguments are graph parameters (tensors)
        self.declared = declared  # each parameter's shape in the graph (a view of the argument)
        self.single = single      # one output: the executable returns an array, not a tuple
        self.devices = devices    # each output's device, where it is not the CPU
        # The CUDA device every output is on (by address, run_at(device=True)), or None.
        self.device = devices[0] if devices and None not in devices and len(set(devices)) == 1 else None
        self.outputs = outputs    # each output's (shape as written, dtype)
        # For each output, the permute that gives it the traced layout from the memory
        # as written (an output laid out like a permute, torch_lowering.output_order),
        # or None; None for all when every output is contiguous.
        self.inverse = inverse
        # A graph with size symbols (torch_symbolic.Symbolic): shapes above name them,
        # and each call binds them from its arguments.
        self.symbolic = symbolic
        # Outputs of the latest calls, a set reused once nothing else holds it; two
        # sets, so that `y = f(x)` in a loop, which holds the last y during the call,
        # reuses too. By address: CPU tensors with their storages' use counts when only
        # this list held them; through numpy (CUDA): numpy arrays with weak references
        # to the tensors over them.
        self.kept_at = []
        self.kept = []
        # The common call (_run_plain), a PlainCall, or None: static shapes, on the
        # CPU, no argument or output that is a permute.
        plain = (exe is not None and symbolic is None and devices is None and inverse is None
                 and all(getattr(shape, "order", None) is None for shape in declared))
        self.plain = PlainCall(exe, params, _storage_use_count, _KEPT_OUTPUT_SETS) if plain else None


_KEPT_OUTPUT_SETS = 2
# Whether CPU partitions take and return tensors by address (Executable.run_at); the
# benchmark turns it off to time the numpy boundary beside it.
by_address = True


_storage_use_count = torch._C._storage_Use_Count


def _laid(shape, order):
    """An output's shape as its memory is written (order: output_order's, or None)."""
    return tuple(shape) if order is None else tuple(shape[a] for a in order)


def _concrete(shape, extents):
    return tuple(extents[d] if isinstance(d, str) else d for d in shape)


def _output_tensors(spec, shapes):
    """The outputs' memory: a kept set (of these shapes, when they vary) that no tensor
    outside holds any more (memory already faulted in), else new PyTorch tensors. A
    kept set is (tensors, their storages' addresses, the use counts when only the set
    held them, the tensors' data addresses); the set keeps the storages alive, so the
    addresses stay valid."""
    for i in range(len(spec.kept_at) - 1, -1, -1):  # the newest first
        kept = spec.kept_at[i]
        if list(map(_storage_use_count, kept[1])) == kept[2] and (
                spec.symbolic is None or all(t.shape == s for t, s in zip(kept[0], shapes))):
            del spec.kept_at[i]
            return kept
    if shapes is None:  # static shapes
        shapes = [shape for shape, _ in spec.outputs]
    tensors = [torch.empty(shape, dtype=dtype, device=spec.device) for shape, (_, dtype) in zip(shapes, spec.outputs)]
    storages = [t.untyped_storage()._cdata for t in tensors]
    return tensors, storages, list(map(_storage_use_count, storages)), [t.data_ptr() for t in tensors]


def _keep(spec, kept):
    kept_at = spec.kept_at
    kept_at.append(kept)
    if len(kept_at) > _KEPT_OUTPUT_SETS:
        del kept_at[0]


def _run_plain(spec, args):
    """_run_at for the common call (a specialisation's `plain`) where its PlainCall
    could not: an argument is not contiguous, or no kept output set is free (a
    new set is adopted). The PlainCall does the common call's steps in one C++
    call (measured: docs/torch.md, Not yet)."""
    if not all(args[i].is_contiguous() for i in spec.params):
        return _run_at(spec, args)
    spec.plain.adopt([torch.empty(shape, dtype=dtype) for shape, dtype in spec.outputs])
    out = spec.plain(args)
    if out is None:
        raise RuntimeError(f"stitch: internal error: partition {spec.exe!r} found no free output set after adopting one")
    return out


def _run_at(spec, args, stats=None):
    """A call by address: inputs read where they are (a copy only of one that is not
    contiguous), outputs written into PyTorch tensors; returns new tensors over them,
    so that a kept set is known free when those are gone. On CUDA the addresses are
    device memory and the work is ordered on PyTorch's current stream (nothing goes
    through the host). With `stats`, the call's time goes into its seconds as
    profiling() splits it."""
    start = time.perf_counter() if stats else 0.0
    inputs, copies = [], []  # a copy only of an input that is not contiguous, held for the call
    for i, shape in zip(spec.params, spec.declared):
        t = args[i]
        order = getattr(shape, "order", None)  # an argument passed as its memory lies
        if order is not None:
            t = t.permute(order)
        if not t.is_contiguous():
            t = t.contiguous()
            copies.append(t)
        inputs.append(t.data_ptr())
    if spec.symbolic is None:
        extents = None
        kept = _output_tensors(spec, None)
    else:
        extents = spec.symbolic.extents(args)
        kept = _output_tensors(spec, [_concrete(shape, extents) for shape, _ in spec.outputs])
    tensors = kept[0]
    converted = time.perf_counter() if stats else 0.0
    if spec.device is None:
        spec.exe.run_at(inputs, kept[3], extents)
    else:
        spec.exe.run_at(inputs, kept[3], extents, device=True,
                        stream=torch.cuda.current_stream(spec.device).cuda_stream)
        if stats:  # profiling() times the device's work, not only its queueing
            torch.cuda.synchronize(spec.device)
    ran = time.perf_counter() if stats else 0.0
    _keep(spec, kept)
    if spec.inverse is None:
        out = tuple([t.detach() for t in tensors])
    else:
        out = tuple([t.detach() if inv is None else t.permute(inv) for t, inv in zip(tensors, spec.inverse)])
    if stats:
        stats.seconds["arguments"] += converted - start
        stats.seconds["stitch"] += ran - converted
        stats.seconds["results"] += time.perf_counter() - ran
        stats.timed_calls += 1
    return out


def _calls_by_address(spec):
    """Whether a call goes through _run_at: by_address is on and the outputs are all on
    the CPU or all on one CUDA device."""
    return by_address and (spec.devices is None or spec.device is not None)


def _host_array(t, shape):
    """The argument on the host in its parameter's shape (a view of a contiguous one)."""
    if t.device.type != "cpu":
        t = t.cpu()
    if t.requires_grad:
        t = t.detach()
    order = getattr(shape, "order", None)
    if order is not None:
        t = t.permute(order)
    t = t.contiguous().view(shape)
    # numpy has no bf16: the tensor itself, which the binding reads through DLPack.
    return t if t.dtype == torch.bfloat16 else t.numpy()


def _host_arrays(spec, args):
    extents = spec.symbolic.extents(args) if spec.symbolic else None
    return [_host_array(args[i], _concrete(shape, extents) if extents else shape)
            for i, shape in zip(spec.params, spec.declared)]


def _tensor_of(a):
    """A numpy result as a tensor over its memory; ml_dtypes' bf16 through its bits."""
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view("uint16")).view(torch.bfloat16)
    return torch.from_numpy(a)


def _run(spec, arrays):
    """Runs the executable, into the output arrays of one of the last two calls when no
    tensor over them is alive any more and their shapes are this call's (a caching
    allocator's reuse: memory already faulted in)."""
    shapes = None
    for i in range(len(spec.kept) - 1, -1, -1):  # the newest first
        arrays_out, storages = spec.kept[i]
        if shapes is None:
            extents = spec.symbolic.extents_of_arrays(arrays, spec.declared) if spec.symbolic else None
            shapes = [_concrete(shape, extents) if extents else shape for shape, _ in spec.outputs]
        if all(ref.expired() for ref in storages) and all(a.shape == s for a, s in zip(arrays_out, shapes)):
            del spec.kept[i]
            return spec.exe(*arrays, out=arrays_out)
    return spec.exe(*arrays)


def _results(spec, out):
    """The executable's numpy results as tensors over the same memory (on their device)."""
    if spec.single:
        out = (out,)
    tensors = tuple(_tensor_of(o) for o in out)
    if spec.inverse is not None:
        tensors = tuple(t if inv is None else t.permute(inv) for t, inv in zip(tensors, spec.inverse))
    if spec.devices:
        return tuple(t.to(d) if d is not None else t for t, d in zip(tensors, spec.devices))
    # Measured on [8192, 1024] f32 LayerNorm (docs/torch.md, Performance): fresh output
    # storage costs 1 ms (huge pages) to 9 ms (4 KiB pages) of page faults a call,
    # more than the kernel.
    spec.kept.append((list(out), [StorageWeakRef(t.untyped_storage()) for t in tensors]))
    del spec.kept[:-_KEPT_OUTPUT_SETS]
    return tensors


class _StitchPartition(torch.nn.Module):
    """Calls one partition: Stitch's executable for the arguments' shapes, compiled on
    first sight; PyTorch (the partition's own FX module) if Stitch cannot compile it."""

    def __init__(self, module, stats, options):
        super().__init__()
        self.module = module
        self.stats = stats
        self.options = options
        self.specialisations = {}
        self.symbolic = None  # the specialisation for every size, if there is one
        self.dynamic = is_dynamic(module)
        # A static partition's one specialisation: Dynamo guards the shapes it was
        # traced with (another shape recompiles the graph), so no lookup per call.
        self.only = None

    def forward(self, *args):
        # Dynamo guards dtypes and devices (another recompiles the graph); shapes vary
        # only under dynamic shapes, where one symbolic specialisation takes them all
        # if the partition could be written with its size symbols.
        spec = self.symbolic or self.only
        if spec is None:
            key = tuple(a.shape if isinstance(a, torch.Tensor) else a for a in args)
            spec = self.specialisations.get(key)
            if spec is None:
                spec = self._specialise(key, args)
        self.stats.calls += 1
        if spec.exe is None:
            return self.module(*args)
        if _profiling:
            return self._timed(spec, args)
        if spec.plain is not None and by_address:
            out = spec.plain(args)
            return _run_plain(spec, args) if out is None else out
        if _calls_by_address(spec):
            return _run_at(spec, args)
        return _results(spec, _run(spec, _host_arrays(spec, args)))

    # The FX module calls it directly: nn.Module.__call__'s hook handling cost 1.5 us a call.
    __call__ = forward

    def _timed(self, spec, args):
        if spec.plain is not None and by_address:
            # The common call, timed whole as "stitch" (its conversions are one C++
            # call with the run): through _run_at instead, with kept sets of its
            # own, a partition's time in a model was up to twice the PlainCall's.
            start = time.perf_counter()
            out = spec.plain(args)
            if out is None:
                out = _run_plain(spec, args)
            self.stats.seconds["stitch"] += time.perf_counter() - start
            self.stats.timed_calls += 1
            return out
        if _calls_by_address(spec):
            return _run_at(spec, args, self.stats)
        start = time.perf_counter()
        arrays = _host_arrays(spec, args)
        converted = time.perf_counter()
        out = _run(spec, arrays)
        ran = time.perf_counter()
        out = _results(spec, out)
        seconds = self.stats.seconds
        seconds["arguments"] += converted - start
        seconds["stitch"] += ran - converted
        seconds["results"] += time.perf_counter() - ran
        self.stats.timed_calls += 1
        return out

    def _specialise(self, key, args):
        name = f"{self.stats.name}_s{len(self.specialisations)}"
        spec = self._symbolic(name) if self.dynamic and not self.stats.static_because else None
        if spec is not None:
            self.symbolic = spec
            return spec
        try:
            values = _propagate(self.module, args)
            text, declared, orders = lower_partition(self.module, values, name)
            outputs = [values[n] for n in _flat_output(self.module)]
            exe = self._compiled(name, text)
        except stitch.Error as e:
            # Stitch refused the graph (a back end's limit): PyTorch runs this partition,
            # loudly. Any other exception is a bug in the lowering and propagates.
            self.stats.fallback = f"{type(e).__name__}: {e}"
            if self.stats.report is not None:
                self.stats.report.add_fallback(self.stats.name, self.stats.fallback)
            warnings.warn(f"stitch: {name} runs in PyTorch: {self.stats.fallback}", stacklevel=3)
            spec = _Specialisation(None, [], [], False, None, [])
        else:
            spec = self._made(exe, declared, [(_laid(o.shape, order), o.dtype) for o, order in zip(outputs, orders)],
                              None, orders)
            if all(op in _NOT_COMPUTE_NAMES for op in self.stats.ops) and not self._copies_faster(spec, args):
                spec = _Specialisation(None, [], [], False, None, [])
        self.specialisations[key] = spec
        if not self.dynamic:
            self.only = spec
        return spec

    def _copies_faster(self, spec, args):
        """Whether Stitch's kernels do this partition of views and layout copies
        faster than PyTorch's copies, timed on these arguments (the fastest of
        three calls each). A copy whose source already lies as its result
        (a permute of attention's output, which PyTorch's fused kernel writes
        transposed) is a plain copy, which PyTorch does as fast; and not every
        layout is at a copy's speed in Stitch (docs/torch.md, Layout copies)."""
        if spec.exe.kernel_count == 0:
            return False
        if spec.devices is not None or not by_address or self.stats.backend != "cpu":
            return True  # CUDA and the numpy boundary: not timed

        def fastest(call):
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                call()
                best = min(best, time.perf_counter() - start)
            return best

        with torch.no_grad():
            stitch_s = fastest(lambda: _run_at(spec, args))
            torch_s = fastest(lambda: self.module(*args))
        self.stats.copies_timed = (stitch_s, torch_s)
        return stitch_s < torch_s

    def _symbolic(self, name):
        """The specialisation for every size (dynamic shapes), or None with the reason in
        the stats: the partition is then compiled per input shapes."""
        name = f"{self.stats.name}_sym"
        # Symbolic parameters are read in their logical shapes (the symbols bind from them).
        symbolic, why = lower_symbolic(self.module, name, _propagate,
                                       lambda module, values, name: lower_partition(module, values, name, permuted=False))
        if symbolic is None:
            self.stats.static_because = why
            return None
        try:
            exe = self._compiled(name, symbolic.text)
        except stitch.Error as e:  # the graph needs a form the IR lacks, such as B*T
            self.stats.static_because = f"{type(e).__name__}: {e}"
            return None
        dtypes = [n.meta["val"].dtype for n in _flat_output(self.module)]
        return self._made(exe, symbolic.declared, list(zip(symbolic.outputs, dtypes)), symbolic, symbolic.orders)

    def _compiled(self, name, text):
        self.stats.text = text
        _dump(name, text)
        if self.stats.report is not None:
            self.stats.report.add_partition(self.stats.name, name, text, self.stats.backend,
                                            self.options.get("planner", "stitch"))
        return _compile_text(text, name, self.stats.backend, self.options)

    def _made(self, exe, declared, outputs, symbolic, orders):
        metas = [n.meta.get("val") for n in _flat_output(self.module)]
        devices = [m.device if isinstance(m, torch.Tensor) and m.device.type != "cpu" else None for m in metas]
        params = [i for i, shape in enumerate(declared) if shape is not None]
        inverse = None
        if any(order is not None for order in orders):
            inverse = [None if order is None else tuple(order.index(a) for a in range(len(order))) for order in orders]
        spec = _Specialisation(exe, params, [declared[i] for i in params], len(outputs) == 1,
                               devices if any(devices) else None, outputs, symbolic, inverse)
        self.stats.kernel_count = exe.kernel_count
        self.stats.plan = exe.plan
        self.stats.specialisations += 1
        self.stats.symbolic = symbolic is not None
        self.stats.stitch_fallback = exe.fallback
        return spec


def decompositions():
    """The decompositions AOTAutograd applies: core ATen, which keeps softmax,
    layer norm and GELU whole (Stitch has composites for them), less those of fused
    attention."""
    from torch._decomp import core_aten_decompositions

    table = core_aten_decompositions()
    # Fused attention stays whole (PyTorch's kernel never writes the scores), as under
    # Inductor; decomposed, it would be two bmm around a softmax.
    for op in (aten.scaled_dot_product_attention.default, aten._scaled_dot_product_flash_attention_for_cpu.default):
        table.pop(op, None)
    return table


def _training(gm, example_inputs):
    """Whether AOTAutograd will trace a backward for gm: grad mode is on and an input
    or a parameter requires grad."""
    if not torch.is_grad_enabled():
        return False
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    return any(t.requires_grad for t in tensors) or any(p.requires_grad for p in gm.parameters())


def _measured(training):
    """The attention passes' `chosen`: fused unless written out was measured clearly faster
    (torch_attention_choice.py)."""
    return functools.partial(torch_attention_choice.fused_chosen, training=training)


def stitch_backend(gm, example_inputs, options=None, **kwargs):
    """The torch.compile backend: options (torch.compile(..., options={...})) may set
    planner (none, xla, stitch, ilp, greedy), tune (bool), cache_dir, dots (True:
    matrix products as Stitch dots rather than PyTorch's; False, the default: PyTorch's;
    "auto": each where it was measured faster on this machine), keep_products (True:
    PyTorch's large CPU products write into reused outputs; off by default) and
    attention ("auto", the default: attention written out becomes PyTorch's fused
    kernel unless the written-out form was measured clearly faster on its shapes,
    forward, or forward and backward in training; True: wherever the pattern matches;
    False: never) and
    backend ("cpu", the default, or "cuda": the partitions of CPU tensors compiled for
    the CUDA back end and run through host memory, to check CUDA code on the simulated
    driver) and f32_intermediates (True, the default: a partition's f16 and bf16 values
    stay in f32 between its ops, as in Inductor's kernels; False: each op's result is
    rounded as eager rounds it)."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    options = dict(options or {})
    _host_backend(options)  # a bad choice is refused before anything is traced
    _f32_intermediates(options)
    # A training graph's attention is fused before AOTAutograd, so that its backward is
    # the fused kernel's (torch_attention_dynamo.py); an inference graph's after it.
    fused = 0
    attention = options.get("attention", "auto")
    if attention not in (True, False, "auto"):
        raise ValueError(f'stitch: options["attention"] is {attention!r}; it takes True, False or "auto"')
    if attention and _training(gm, example_inputs):
        fused = fuse_attention_before_autograd(gm, _measured(training=True) if attention == "auto" else None)

    def inference(g, inputs):
        return _compile_graph(g, "inference", options, fused)

    def forward(g, inputs):
        return _compile_graph(g, "forward", options, fused)

    def backward(g, inputs):
        return _compile_graph(g, "backward", options)

    # What the forward saves for the backward: the min-cut partitioner (Inductor's
    # choice too) recomputes cheap pointwise ops in the backward rather than saving
    # their results, where that moves fewer bytes.
    compiler = aot_autograd(fw_compiler=forward, bw_compiler=backward, inference_compiler=inference,
                            decompositions=decompositions(), partition_fn=min_cut_rematerialization_partition)
    return compiler(gm, example_inputs)


def register():
    """Registers backend="stitch" with Dynamo, unless it is registered or torch will
    load it from the torch_dynamo_backends entry point itself (it registers what the
    entry point names, and registering the same name twice is an error)."""
    from torch._dynamo.backends import registry

    if "stitch" in registry._COMPILER_FNS or registry._BACKENDS.get("stitch") is not None:
        return
    registry.register_backend(stitch_backend, name="stitch")


register()
