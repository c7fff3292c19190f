"""The benchmark workloads as PyTorch, JAX and float64 numpy functions.

Shapes and names come from the `.stitch` files themselves: each file's first
graph is the benchmark's entry graph, a graph named `<entry>_small` is its test
variant (used for correctness checks and CPU smoke runs), and every other graph
(`_dyn`, symbolic dims) is ignored. The Triton tutorial sweep points come from
sweeps.py, parsed from the same text it writes, so a row here always carries the
name of the graph `stitch bench` reports.

The computation is written by hand per entry graph ("family") below, three
times: `numpy` (float64, the reference of `run_peers.py --check`), `torch` and
`jax`. The torch and jax versions use the framework's own op where the graph
uses a composite (softmax, log_softmax, layer_norm, gelu) and spell out the
graph's primitives otherwise, in the graph's order of operations. JAX is
imported only when a jax function runs.
"""

import dataclasses
import math
import os
import re

import numpy as np

import sweeps

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = F = None

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_WORKLOAD_DIR = os.path.join(REPO_ROOT, "bench", "workloads")

NUMPY_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64,
                "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                "u8": np.uint8, "bool": np.bool_}
FLOAT_DTYPES = ("f16", "f32", "f64")


@dataclasses.dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple

    @property
    def nbytes(self):
        return math.prod(self.shape) * np.dtype(NUMPY_DTYPES[self.dtype]).itemsize

    def __str__(self):
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclasses.dataclass(frozen=True)
class Signature:
    name: str
    params: tuple  # ((name, TensorType), ...)
    results: tuple  # (TensorType, ...); empty when the file has no `-> (...)` clause
    returns: tuple  # names of the returned values, in order (`stitch run --output-dir` file stems)


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str  # the graph's name: the row name `stitch bench` uses
    family: str  # the key of its implementation in FAMILIES
    kind: str  # "entry", "small" (an entry's test variant) or "sweep"
    signature: Signature
    check: Signature  # the shapes the correctness check runs on
    source: str  # the file (relative to the repo) or "sweeps.py"
    text: str  # the whole file, for `stitch run` in run_peers.py --check --stitch

    @property
    def bytes_min(self):
        """Every input read once + every output written once, as `stitch bench` counts."""
        if not self.signature.results:
            return None
        return (sum(t.nbytes for _, t in self.signature.params)
                + sum(t.nbytes for t in self.signature.results))


# --- parsing the graph signatures of a .stitch file ------------------------

_GRAPH_RE = re.compile(r"^\s*graph\s+(\w+)\s*\(([^)]*)\)\s*(?:->\s*\(([^)]*)\))?\s*\{", re.M)
_PARAM_RE = re.compile(r"(\w+)\s*:\s*(\w+)\s*\[([^\]]*)\]")
_TYPE_RE = re.compile(r"(\w+)\s*\[([^\]]*)\]")
_RETURN_RE = re.compile(r"^\s*return\s+([^\n]*)", re.M)


def _shape(text):
    """A static shape, or None when a dim is symbolic."""
    dims = [d.strip() for d in text.split(",") if d.strip()]
    if not all(d.isdigit() for d in dims):
        return None
    return tuple(int(d) for d in dims)


def _strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def parse_signatures(text):
    """[Signature] of every graph with static shapes, in file order; None marks a symbolic one."""
    out = []
    text = _strip_comments(text)
    for m in _GRAPH_RE.finditer(text):
        name, params_text, results_text = m.group(1), m.group(2), m.group(3) or ""
        ret = _RETURN_RE.search(text, m.end())
        returns = tuple(r.strip() for r in ret.group(1).split(",")) if ret else ()
        params, results, static = [], [], True
        for pname, dtype, dims in _PARAM_RE.findall(params_text):
            shape = _shape(dims)
            static &= shape is not None
            params.append((pname, TensorType(dtype, shape or ())))
        for dtype, dims in _TYPE_RE.findall(results_text):
            shape = _shape(dims)
            static &= shape is not None
            results.append(TensorType(dtype, shape or ()))
        out.append(Signature(name, tuple(params), tuple(results), returns) if static else None)
    return out


def _from_text(text, kind, source, family):
    """The entry workload of one file's text and, when present, its `_small` variant."""
    sigs = parse_signatures(text)
    if not sigs or sigs[0] is None:
        return []
    entry = sigs[0]
    small = next((s for s in sigs[1:] if s is not None and s.name == entry.name + "_small"), None)
    out = [Workload(entry.name, family(entry.name), kind, entry, small or entry, source, text)]
    if small is not None:
        out.append(Workload(small.name, family(entry.name), "small", small, small, source, text))
    return out


def _sweep_family(name):
    m = re.fullmatch(r"triton_(softmax|layernorm)_n\d+", name)
    return m.group(1) if m else name


def load(dirs=None, with_sweeps=False):
    """Every workload of the .stitch files in `dirs` (default bench/workloads), plus the sweeps."""
    workloads = []
    for d in dirs or [DEFAULT_WORKLOAD_DIR]:
        for fname in sorted(os.listdir(d)):
            if not fname.endswith(".stitch"):
                continue
            path = os.path.join(d, fname)
            with open(path) as f:
                text = f.read()
            source = os.path.relpath(path, REPO_ROOT)
            workloads += _from_text(text, "entry", source, _sweep_family)
    if with_sweeps:
        for _, text in sweeps.sweep_files():
            workloads += _from_text(text, "sweep", "sweeps.py", _sweep_family)
    return workloads


def make_inputs(signature, seed=1):
    """numpy inputs for a signature: floats standard normal, integers in [0, 16), bools fair; seeded."""
    rng = np.random.default_rng(seed)
    arrays = []
    for _, t in signature.params:
        dtype = NUMPY_DTYPES[t.dtype]
        if t.dtype in FLOAT_DTYPES:
            a = rng.standard_normal(t.shape, dtype=np.float32).astype(dtype, copy=False)
        elif t.dtype == "bool":
            a = rng.random(t.shape) < 0.5
        else:
            a = rng.integers(0, 16, size=t.shape).astype(dtype)
        arrays.append(np.ascontiguousarray(a))
    return arrays


# --- the implementations ----------------------------------------------------

def _jnp():
    import jax.numpy as jnp
    return jnp


def _jax():
    import jax
    return jax


_HAS_RMS_NORM = F is not None and hasattr(F, "rms_norm")
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_np_erf = np.frompyfunc(math.erf, 1, 1)


def _np_gelu(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + _np_erf(x / math.sqrt(2.0)).astype(np.float64))


def _np_layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_jacobi_half(a, b):
    return np.concatenate([b[:1], 0.33333 * ((a[:-2] + a[1:-1]) + a[2:]), b[-1:]])


def _torch_layer_norm(x, gamma, beta, eps):
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps=eps)


def _torch_jacobi_half(a, b):
    return torch.cat([b[:1], 0.33333 * ((a[:-2] + a[1:-1]) + a[2:]), b[-1:]])


def _torch_rms_norm(x, gamma, eps):
    if _HAS_RMS_NORM:
        return F.rms_norm(x, x.shape[-1:], gamma, eps=eps)
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * gamma


def _jax_layer_norm(x, gamma, beta, eps):
    # Written out: jax.nn.standardize's default variance is E[x^2] - E[x]^2, not
    # the composite's mean of squared deviations.
    jnp = _jnp()
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    var = jnp.mean(centred * centred, axis=-1, keepdims=True)
    return centred * _jax().lax.rsqrt(var + eps) * gamma + beta


def _jax_jacobi_half(a, b):
    jnp = _jnp()
    return jnp.concatenate([b[:1], 0.33333 * ((a[:-2] + a[1:-1]) + a[2:]), b[-1:]])


def _gelu_torch(approximate):
    def f(x):
        return F.gelu(x, approximate=approximate)
    return f


def _gelu_jax(approximate):
    def f(x):
        return _jax().nn.gelu(x, approximate=approximate == "tanh")
    return f


@dataclasses.dataclass(frozen=True)
class Family:
    numpy: object  # float64 reference: numpy arrays in, a tuple of arrays out
    torch: object
    jax: object


def _tuple(f):
    """Wrap a one-result function so every implementation returns a tuple."""
    def g(*args):
        out = f(*args)
        return out if isinstance(out, tuple) else (out,)
    g.__name__ = getattr(f, "__name__", "fn")
    return g


def _family(numpy, torch, jax):
    return Family(_tuple(numpy), _tuple(torch), _tuple(jax))


def _torch_sum(v):
    return v.sum()


def _bias_grad(erf, exp, total):
    """GELU backward (erf form) and its bias gradient, as bias_grad.stitch writes it:
    dx = dy * gelu'(x), db = dx summed over every axis but the last."""
    def f(dy, x):
        cdf = (erf(x * 0.7071067811865476) + 1.0) * 0.5
        pdf = exp(x * x * -0.5) * 0.3989422804014327
        dx = dy * (cdf + x * pdf)
        return dx, total(dx)
    return f


FAMILIES = {
    "add": _family(lambda x, y: x + y, lambda x, y: x + y, lambda x, y: x + y),
    "babelstream_add": _family(lambda a, b: a + b, lambda a, b: a + b, lambda a, b: a + b),
    "babelstream_copy": _family(lambda a: a + 0.0, lambda a: a + 0.0, lambda a: a + 0.0),
    "babelstream_dot": _family(lambda a, b: np.sum(a * b), lambda a, b: _torch_sum(a * b),
                               lambda a, b: _jnp().sum(a * b)),
    "babelstream_mul": _family(lambda c: 0.4 * c, lambda c: 0.4 * c, lambda c: 0.4 * c),
    "babelstream_triad": _family(lambda b, c: b + 0.4 * c, lambda b, c: b + 0.4 * c,
                                 lambda b, c: b + 0.4 * c),
    "bias_gelu": _family(lambda x, bias: _np_gelu(x + bias, "tanh"),
                         lambda x, bias: _gelu_torch("tanh")(x + bias),
                         lambda x, bias: _gelu_jax("tanh")(x + bias)),
    "bias_grad": _family(
        _bias_grad(lambda v: _np_erf(v).astype(np.float64), np.exp, lambda dx: dx.sum(axis=(0, 1))),
        _bias_grad(lambda v: torch.erf(v), lambda v: torch.exp(v), lambda dx: dx.sum(dim=(0, 1))),
        _bias_grad(lambda v: _jax().lax.erf(v), lambda v: _jnp().exp(v),
                   lambda dx: _jnp().sum(dx, axis=(0, 1)))),
    "column_reduce_sub": _family(
        lambda x: x - np.broadcast_to(x.mean(axis=0), x.shape),
        lambda x: x - x.mean(dim=0).broadcast_to(x.shape),
        lambda x: x - _jnp().broadcast_to(_jnp().mean(x, axis=0), x.shape)),
    "double_center": _family(
        lambda x: (x - x.mean(axis=2, keepdims=True)) - x.mean(axis=1, keepdims=True),
        lambda x: (x - x.mean(dim=2, keepdim=True)) - x.mean(dim=1, keepdim=True),
        lambda x: (x - _jnp().mean(x, axis=2, keepdims=True)) - _jnp().mean(x, axis=1, keepdims=True)),
    "gelu_erf": _family(lambda x: _np_gelu(x, "none"), _gelu_torch("none"), _gelu_jax("none")),
    "gelu_tanh": _family(lambda x: _np_gelu(x, "tanh"), _gelu_torch("tanh"), _gelu_jax("tanh")),
    "jacobi1d": _family(_np_jacobi_half, _torch_jacobi_half, _jax_jacobi_half),
    "jacobi1d_tstep": _family(
        lambda a, b: (lambda bn: (_np_jacobi_half(bn, a), bn))(_np_jacobi_half(a, b)),
        lambda a, b: (lambda bn: (_torch_jacobi_half(bn, a), bn))(_torch_jacobi_half(a, b)),
        lambda a, b: (lambda bn: (_jax_jacobi_half(bn, a), bn))(_jax_jacobi_half(a, b))),
    "layernorm": _family(lambda x, g, b: _np_layer_norm(x, g, b, 1e-5),
                         lambda x, g, b: _torch_layer_norm(x, g, b, 1e-5),
                         lambda x, g, b: _jax_layer_norm(x, g, b, 1e-5)),
    "log_softmax": _family(
        lambda x: (x - x.max(axis=-1, keepdims=True))
        - np.log(np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1, keepdims=True)),
        lambda x: x.log_softmax(dim=-1),
        lambda x: _jax().nn.log_softmax(x, axis=-1)),
    "residual_layernorm": _family(
        lambda x, bias, r, g, b: _np_layer_norm((x + bias) + r, g, b, 1e-12),
        lambda x, bias, r, g, b: _torch_layer_norm((x + bias) + r, g, b, 1e-12),
        lambda x, bias, r, g, b: _jax_layer_norm((x + bias) + r, g, b, 1e-12)),
    "rmsnorm": _family(
        lambda x, g: x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * g,
        lambda x, g: _torch_rms_norm(x, g, 1e-6),
        lambda x, g: x * _jax().lax.rsqrt(_jnp().mean(x * x, axis=-1, keepdims=True) + 1e-6) * g),
    "softmax": _family(_np_softmax, lambda x: x.softmax(dim=-1),
                       lambda x: _jax().nn.softmax(x, axis=-1)),
    # The Triton tutorial's naive_softmax: the graph's primitives, one op each.
    "softmax_explicit": _family(
        _np_softmax,
        lambda x: (lambda e: e / e.sum(dim=1, keepdim=True))((x - x.amax(dim=1, keepdim=True)).exp()),
        lambda x: (lambda e: e / _jnp().sum(e, axis=1, keepdims=True))(
            _jnp().exp(x - _jnp().max(x, axis=1, keepdims=True)))),
    "swish": _family(lambda x: x * (1.0 / (1.0 + np.exp(-x))),
                     lambda x: x * x.sigmoid(),
                     lambda x: x * _jax().nn.sigmoid(x)),
    "transpose_add": _family(lambda a, b: a.T + b, lambda a, b: a.t() + b, lambda a, b: a.T + b),
}


def implementation(workload):
    """The workload's Family, or None when it has no peer implementation."""
    return FAMILIES.get(workload.family)
