#!/usr/bin/env python3
"""Writes the golden cases that tests/interp/golden_test.cpp checks the reference
interpreter against.

The interpreter is the oracle for every other part of Stitch, so its own truth
must come from somewhere else: here every expected output is computed from the
inputs with numpy, Python's exact rationals (fractions.Fraction) and, for the
transcendental functions, the C library's double-precision functions called
through ctypes -- never with Stitch code. Each result is computed in float64 (or
exactly) and then rounded once to the output dtype, following docs/semantics.md.

numpy's own float64 exp/log/sin/... loops use SVML on AVX-512 machines and were
measured up to 3 ulp away from glibc; calling libm directly keeps the float64
references to the precision docs/semantics.md promises (1 ulp).

Output: tests/interp/golden/<case>/{in0.npy, in1.npy, ..., out.npy[, tol.npy]}
and tests/interp/golden/cases.txt, one line per case:

    <case> <op> <tolerance> <attrs>

<attrs> is '-' or 'key=value;key=value' with values: an int, a float (has '.',
'e', 'inf' or 'nan'), true/false, a dtype name, "string" or [int, ...].
<tolerance> is exact, signed (exact, and the sign of zeros must match too),
ulp:N (N units in the last place of the output dtype) or bound (tol.npy holds
an absolute error bound per element). docs/semantics.md justifies each choice.

Run with /usr/bin/python3 (Debian's numpy); the output is deterministic.
"""
import ctypes
import math
import pathlib
import shutil
from fractions import Fraction

import numpy as np

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "tests" / "interp" / "golden"

NAN = math.nan
INF = math.inf

# precision (significand bits incl. the implicit one), min normal exponent, max exponent
FLOAT_FORMATS = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127), "f64": (53, -1022, 1023)}
INT_BITS = {"i8": 8, "i32": 32, "i64": 64}
NUMPY_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i32": np.int32,
               "i64": np.int64, "bool": np.bool_}
FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["i8", "i32", "i64"]

# ---------------------------------------------------------------- rounding

def round_binary(v, dtype):
    """The value of v (a float or an int, taken exactly) in float dtype, rounded to nearest even."""
    p, emin, emax = FLOAT_FORMATS[dtype]
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return v
    exact = Fraction(v)
    if exact == 0:
        return math.copysign(0.0, v) if isinstance(v, float) else 0.0
    sign = -1.0 if exact < 0 else 1.0
    a = abs(exact)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    r = round(a / ulp) * ulp  # Fraction.__round__ is half to even
    if r > (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax:
        return sign * INF
    return sign * float(r)


def ulp_at(x, dtype):
    p, emin, _ = FLOAT_FORMATS[dtype]
    if math.isnan(x) or math.isinf(x) or x == 0:
        return math.ldexp(1.0, emin - p + 1)
    return math.ldexp(1.0, max(math.frexp(abs(x))[1] - 1, emin) - p + 1)


def wrap(v, dtype):
    if dtype == "bool":
        return int(v != 0)
    bits = INT_BITS[dtype]
    v = int(v) % (1 << bits)
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def to_dtype(values, dtype):
    """Rounds (floats) or wraps (ints) every element; returns float64 or object arrays."""
    a = np.asarray(values, dtype=object if dtype not in FLOATS else np.float64)
    if dtype in FLOATS:
        return np.vectorize(lambda v: round_binary(float(v), dtype), otypes=[np.float64])(a) if a.size else a
    out = np.empty(a.shape, dtype=object)
    for i, v in np.ndenumerate(a):
        out[i] = wrap(v, dtype)
    return out


def subnormal(dtype, k=3):
    p, emin, _ = FLOAT_FORMATS[dtype]
    return k * math.ldexp(1.0, emin - p + 1)

# ---------------------------------------------------------------- libm

_LIBM = ctypes.CDLL("libm.so.6")


def _libm(name, arity=1):
    f = getattr(_LIBM, name)
    f.restype = ctypes.c_double
    f.argtypes = [ctypes.c_double] * arity
    return np.vectorize(lambda *xs: f(*[float(x) for x in xs]), otypes=[np.float64])


LIBM = {n: _libm(n) for n in ["exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "tanh", "erf"]}
LIBM["pow"] = _libm("pow", 2)
LIBM["atan2"] = _libm("atan2", 2)


def sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    e = LIBM["exp"](-np.abs(x)) if x.size else x
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)) if x.size else x

# ---------------------------------------------------------------- writing

CASES = []


def storage(values, dtype):
    """values as the numpy array to save: C order (what Stitch reads), bf16 as 2-byte voids."""
    a = np.asarray(values)
    if dtype == "bf16":
        bits = np.array([np.float32(float(v)).view(np.uint32) >> 16 for v in a.flat], dtype="<u2")
        return bits.reshape(a.shape).view("V2")
    if dtype in INTS or dtype == "bool":
        return np.array([int(v) for v in a.flat], dtype=NUMPY_TYPES[dtype]).reshape(a.shape)
    return a.astype(np.float64).astype(NUMPY_TYPES[dtype]).copy(order="C")


def check_exact(values, dtype):
    """Inputs and outputs must already be values of their dtype."""
    if dtype in FLOATS:
        for v in np.asarray(values, dtype=np.float64).flat:
            r = round_binary(float(v), dtype)
            assert (math.isnan(v) and math.isnan(r)) or r == v, (v, dtype)


def attrs_text(attrs):
    if not attrs:
        return "-"
    parts = []
    for key, value in attrs.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            text = "[" + ",".join(str(int(v)) for v in value) + "]"
        elif isinstance(value, float):
            text = repr(value)
        elif isinstance(value, str) and (value in NUMPY_TYPES or value == "bf16"):
            text = value
        elif isinstance(value, str):
            text = '"' + value + '"'
        else:
            text = str(int(value))
        parts.append(f"{key}={text}")
    return ";".join(parts)


def case(name, op, tolerance, inputs, out, attrs=None, tol=None):
    """inputs: [(values, dtype)], out: (values, dtype); values exact in their dtype."""
    assert all(c not in name for c in " /;"), name
    assert name not in {c[0] for c in CASES}, name
    for values, dtype in inputs + [out]:
        check_exact(values, dtype)
    CASES.append((name, op, tolerance, inputs, out, attrs or {}, tol))


def write_all():
    if GOLDEN.exists():
        shutil.rmtree(GOLDEN)
    GOLDEN.mkdir(parents=True)
    lines = []
    for name, op, tolerance, inputs, out, attrs, tol in CASES:
        d = GOLDEN / name
        d.mkdir()
        for i, (values, dtype) in enumerate(inputs):
            np.save(d / f"in{i}.npy", storage(values, dtype), allow_pickle=False)
        np.save(d / "out.npy", storage(*out), allow_pickle=False)
        if tolerance == "bound":
            np.save(d / "tol.npy", np.asarray(tol, dtype=np.float64), allow_pickle=False)
        lines.append(f"{name} {op} {tolerance} {attrs_text(attrs)}")
    (GOLDEN / "cases.txt").write_text(
        "# Written by scripts/gen_interp_golden.py; see its docstring for the format.\n" + "\n".join(lines) + "\n")

# ---------------------------------------------------------------- elementwise

def special_values(dtype):
    """20 values: IEEE specials, ties for round, a subnormal, and ordinary numbers."""
    vals = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, -7.25, 3.0, 20.0, -20.0, 1e-3,
            subnormal(dtype), -subnormal(dtype, 5)]
    return to_dtype(np.array(vals).reshape(4, 5), dtype)


def float_pairs(dtype):
    pairs = [(1.5, 2.25), (-3.0, 0.5), (0.1, 0.2), (1e-3, 7.0), (5.0, 3.0), (-5.0, 3.0), (5.0, -3.0), (7.5, -2.0),
             (0.0, -0.0), (-0.0, 0.0), (NAN, 1.0), (1.0, NAN), (INF, 1.0), (INF, -INF), (INF, INF), (-INF, 2.0),
             (2.0, 0.0), (-2.0, -0.0), (subnormal(dtype), 0.5), (100.0, 1e-3)]
    a = to_dtype(np.array([p[0] for p in pairs]).reshape(4, 5), dtype)
    b = to_dtype(np.array([p[1] for p in pairs]).reshape(4, 5), dtype)
    return a, b


def rsqrt(x):
    with np.errstate(all="ignore"):
        return 1.0 / np.sqrt(x)


def relu(x):
    return np.where(np.isnan(x), x, np.where(x > 0, x, 0.0))


FLOAT_UNARY = {
    # op: (reference on float64, tolerance)
    "neg": (np.negative, "signed"),
    "abs": (np.abs, "signed"),
    "exp": (LIBM["exp"], "ulp:1"),
    "exp2": (LIBM["exp2"], "ulp:1"),
    "log": (LIBM["log"], "ulp:1"),
    "log2": (LIBM["log2"], "ulp:1"),
    "log1p": (LIBM["log1p"], "ulp:1"),
    "expm1": (LIBM["expm1"], "ulp:1"),
    "sqrt": (np.sqrt, "signed"),
    "rsqrt": (rsqrt, "exact"),
    "reciprocal": (lambda x: 1.0 / x, "signed"),
    "sin": (LIBM["sin"], "ulp:1"),
    "cos": (LIBM["cos"], "ulp:1"),
    "tan": (LIBM["tan"], "ulp:1"),
    "tanh": (LIBM["tanh"], "ulp:1"),
    "sigmoid": (sigmoid, "ulp:1"),
    "erf": (LIBM["erf"], "ulp:1"),
    "relu": (relu, "signed"),
    "floor": (np.floor, "signed"),
    "ceil": (np.ceil, "signed"),
    "round": (np.rint, "signed"),
    "sign": (np.sign, "exact"),
    "isnan": (np.isnan, "exact"),
    "isinf": (np.isinf, "exact"),
}
NARROW_UNARY = ["neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "erf", "relu", "floor", "round", "sign",
                "isnan"]


def unary_cases():
    for op, (ref, tolerance) in FLOAT_UNARY.items():
        for dtype in FLOATS:
            if dtype in ("f16", "bf16") and op not in NARROW_UNARY:
                continue
            x = special_values(dtype)
            with np.errstate(all="ignore"):
                y = ref(x)
            out_dtype = "bool" if op in ("isnan", "isinf") else dtype
            case(f"{op}_{dtype}", op, tolerance, [(x, dtype)], (to_dtype(y, out_dtype), out_dtype))

    int_values = {
        "i8": [-128, 127, 0, 1, -1, 5, -5, 100, -100, 64, -64, 2],
        "i32": [-2**31, 2**31 - 1, 0, 1, -1, 5, -5, 123456789, -123456789, 65536, -7, 2],
        "i64": [-2**63, 2**63 - 1, 0, 1, -1, 5, -5, 2**53 + 1, -2**40, 3, 7, -2],
    }
    int_refs = {
        "neg": lambda v: -v,
        "abs": abs,
        "sign": lambda v: (v > 0) - (v < 0),
        "relu": lambda v: max(v, 0),
        "not": lambda v: ~v,
    }
    for dtype, values in int_values.items():
        x = np.array(values, dtype=object).reshape(3, 4)
        for op, ref in int_refs.items():
            case(f"{op}_{dtype}", op, "exact", [(x, dtype)], (to_dtype(np.vectorize(ref, otypes=[object])(x), dtype), dtype))
        for op in ("isnan", "isinf"):
            case(f"{op}_{dtype}", op, "exact", [(x, dtype)], (np.zeros(x.shape, dtype=object), "bool"))
    b = np.array([0, 1, 1, 0], dtype=object)
    case("not_bool", "not", "exact", [(b, "bool")], (1 - b, "bool"))


FLOAT_BINARY = {
    "add": (np.add, "signed"),
    "sub": (np.subtract, "signed"),
    "mul": (np.multiply, "signed"),
    "div": (np.divide, "signed"),
    "rem": (np.fmod, "signed"),
    "pow": (LIBM["pow"], "ulp:1"),
    "max": (np.maximum, "exact"),
    "min": (np.minimum, "exact"),
    "atan2": (LIBM["atan2"], "ulp:1"),
    "eq": (np.equal, "exact"),
    "ne": (np.not_equal, "exact"),
    "lt": (np.less, "exact"),
    "le": (np.less_equal, "exact"),
    "gt": (np.greater, "exact"),
    "ge": (np.greater_equal, "exact"),
}
NARROW_BINARY = ["add", "mul", "div", "max", "pow", "lt"]
COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a, b):
    return a - trunc_div(a, b) * b


INT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": trunc_div,
    "rem": c_rem,
    "pow": lambda a, b: a ** b,
    "max": max,
    "min": min,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def int_pairs(dtype, kind):
    lo, hi = -(1 << (INT_BITS[dtype] - 1)), (1 << (INT_BITS[dtype] - 1)) - 1
    if kind == "div":  # no zero divisor and no MIN / -1: numpy does not define them; int_edge_test.cpp does
        pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (hi, 3), (lo, 3), (lo, 1), (hi, -1), (0, 5), (1, hi), (lo, hi),
                 (100, 7)]
    elif kind == "pow":
        pairs = [(2, 3), (-2, 3), (3, 0), (0, 0), (0, 5), (-1, 7), (3, 5), (3, 40), (-3, 41), (7, 2), (lo, 2), (2, 62)]
    else:
        pairs = [(hi, 1), (lo, -1), (lo, lo), (hi, hi), (0, 0), (5, -3), (-5, 3), (100, 100), (-100, -100), (lo, hi),
                 (12, 10), (-1, 1)]
    pairs = [(wrap(a, dtype), wrap(b, dtype)) for a, b in pairs]
    a = np.array([p[0] for p in pairs], dtype=object).reshape(3, 4)
    b = np.array([p[1] for p in pairs], dtype=object).reshape(3, 4)
    return a, b


def binary_cases():
    for op, (ref, tolerance) in FLOAT_BINARY.items():
        for dtype in FLOATS:
            if dtype in ("f16", "bf16") and op not in NARROW_BINARY:
                continue
            a, b = float_pairs(dtype)
            with np.errstate(all="ignore"):
                y = ref(a, b)
            out_dtype = "bool" if op in COMPARISONS else dtype
            case(f"{op}_{dtype}", op, tolerance, [(a, dtype), (b, dtype)], (to_dtype(y, out_dtype), out_dtype))
    for op, ref in INT_BINARY.items():
        for dtype in INTS:
            a, b = int_pairs(dtype, "div" if op in ("div", "rem") else "pow" if op == "pow" else "any")
            out_dtype = "bool" if op in COMPARISONS else dtype
            y = np.vectorize(lambda p, q: ref(int(p), int(q)), otypes=[object])(a, b)
            case(f"{op}_{dtype}", op, "exact", [(a, dtype), (b, dtype)], (to_dtype(y, out_dtype), out_dtype))
    a = np.array([0, 0, 1, 1], dtype=object)
    b = np.array([0, 1, 0, 1], dtype=object)
    for op in ["and", "or", "xor"] + COMPARISONS:
        y = np.vectorize(lambda p, q: int(INT_BINARY[op](int(p), int(q))), otypes=[object])(a, b)
        case(f"{op}_bool", op, "exact", [(a, "bool"), (b, "bool")], (y, "bool"))


def grid(shape, dtype, seed, scale=2.0):
    """Deterministic ordinary values of `dtype` (ints small), shaped `shape`."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype in FLOATS:
        return to_dtype(np.round(rng.uniform(-scale, scale, n), 3).reshape(shape), dtype)
    if dtype == "bool":
        return np.array([int(v) for v in rng.integers(0, 2, n)], dtype=object).reshape(shape)
    return np.array([int(v) for v in rng.integers(-9, 10, n)], dtype=object).reshape(shape)


def broadcast_cases():
    specs = [
        ("add", "f32", (3, 1), (1, 4)),
        ("mul", "f64", (2, 3, 4), (4,)),
        ("sub", "f32", (), (3, 4)),
        ("max", "i32", (2, 1, 5), (3, 1)),
        ("lt", "f32", (3, 4), (3, 1)),
        ("and", "bool", (2, 3), (3,)),
        ("add", "f16", (2, 3), (2, 1)),
        ("div", "f64", (0, 3), (1, 3)),
    ]
    for i, (op, dtype, sa, sb) in enumerate(specs):
        a, b = grid(sa, dtype, 10 + i), grid(sb, dtype, 20 + i)
        if dtype in FLOATS:
            y = FLOAT_BINARY[op][0](np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        else:
            y = np.vectorize(lambda p, q: int(INT_BINARY[op](int(p), int(q))), otypes=[object])(a, b)
        out_dtype = "bool" if op in COMPARISONS else dtype
        case(f"broadcast_{op}_{dtype}_{i}", op, "signed" if dtype in FLOATS and op not in COMPARISONS else "exact",
             [(a, dtype), (b, dtype)], (to_dtype(y, out_dtype), out_dtype))


def select_clamp_cases():
    c = np.array([1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0], dtype=object).reshape(3, 4)
    a, b = float_pairs("f32")
    a, b = a.reshape(-1)[:12].reshape(3, 4), b.reshape(-1)[:12].reshape(3, 4)
    case("select_f32", "select", "signed", [(c, "bool"), (a, "f32"), (b, "f32")],
         (np.where(c.astype(bool), a, b), "f32"))
    c2 = np.array([1, 0, 1], dtype=object).reshape(3, 1)
    a2 = grid((1, 4), "i32", 31)
    b2 = np.array(-100, dtype=object)
    case("select_i32_broadcast", "select", "exact", [(c2, "bool"), (a2, "i32"), (b2, "i32")],
         (np.where(c2.astype(bool), a2, b2), "i32"))
    cb = np.array([1, 0, 0, 1], dtype=object)
    ab = np.array([1, 1, 0, 0], dtype=object)
    bb = np.array([0, 1, 1, 0], dtype=object)
    case("select_bool", "select", "exact", [(cb, "bool"), (ab, "bool"), (bb, "bool")],
         (np.where(cb.astype(bool), ab, bb), "bool"))
    case("select_bf16", "select", "signed", [(c, "bool"), (special_values("bf16")[:3, :4], "bf16"),
                                             (grid((4,), "bf16", 32), "bf16")],
         (np.where(c.astype(bool), special_values("bf16")[:3, :4], grid((4,), "bf16", 32)), "bf16"))

    def clip(x, lo, hi):
        return np.minimum(np.maximum(x, lo), hi)

    x = special_values("f32")[:3, :4]
    lo, hi = to_dtype(np.array(-1.5), "f32"), to_dtype(np.array(2.0), "f32")
    case("clamp_f32_scalar_bounds", "clamp", "exact", [(x, "f32"), (lo, "f32"), (hi, "f32")], (clip(x, lo, hi), "f32"))
    xi = grid((3, 4), "i32", 33)
    loi = np.array([-5, -2, 0, 3], dtype=object)
    hii = np.array([5, 1, 2], dtype=object).reshape(3, 1)
    case("clamp_i32_broadcast", "clamp", "exact", [(xi, "i32"), (loi, "i32"), (hii, "i32")],
         (np.minimum(np.maximum(xi, loi), hii), "i32"))
    xd = grid((2, 3), "f64", 34)
    lod = to_dtype(np.array([[0.5, -1.0, NAN], [1.0, -3.0, 0.0]]), "f64")
    hid = to_dtype(np.array([1.0, -2.0, 5.0]), "f64")  # lo > hi in places: the result is hi
    case("clamp_f64_nan_and_crossed_bounds", "clamp", "exact", [(xd, "f64"), (lod, "f64"), (hid, "f64")],
         (clip(xd, lod, hid), "f64"))

# ---------------------------------------------------------------- casts

def cast_inputs(dtype):
    if dtype in FLOATS:
        vals = [NAN, INF, -INF, 0.0, -0.0, 2.5, -2.5, 0.9, -0.9, 300.7, -129.9, 0.1, 65519.0, 65520.0, 1e10, -1e10,
                2.0 ** 24 + 1, 3e38, 1e-7, subnormal(dtype)]
        return to_dtype(np.array(vals), dtype)
    if dtype == "bool":
        return np.array([0, 1, 1, 0], dtype=object)
    vals = [0, 1, -1, 127, 128, -129, 300, 65520, 2**24 + 1, 2**31, -2**31 - 1, 2**53 + 1, 2**60 + 2**52 + 1,
            -2**63, 2**63 - 1, -(2**60 + 2**52 + 1)]
    return to_dtype(np.array(vals, dtype=object), dtype)


def cast_value(v, src, dst):
    if src in FLOATS:
        v = float(v)
        if dst in FLOATS:
            return round_binary(v, dst)
        if dst == "bool":
            return int(v != 0)  # NaN != 0
        if math.isnan(v):
            return 0
        lo, hi = -(1 << (INT_BITS[dst] - 1)), (1 << (INT_BITS[dst] - 1)) - 1
        return hi if v >= hi + 1 else lo if v <= lo else int(v)  # int() truncates toward zero
    v = int(v)
    return round_binary(v, dst) if dst in FLOATS else wrap(v, dst)


def cast_cases():
    for src in FLOATS + INTS + ["bool"]:
        x = cast_inputs(src)
        for dst in FLOATS + INTS + ["bool"]:
            y = np.array([cast_value(v, src, dst) for v in x], dtype=np.float64 if dst in FLOATS else object)
            case(f"cast_{src}_to_{dst}", "cast", "signed" if dst in FLOATS else "exact", [(x, src)], (y, dst),
                 {"to": dst})

# ---------------------------------------------------------------- reductions

def reduce_rows(x, axes):
    """(rows, out_shape_without_keepdims): rows[i] lists the reduced elements of output i in row-major order."""
    x = np.asarray(x)
    kept = [d for d in range(x.ndim) if d not in axes]
    moved = np.transpose(x, kept + list(axes))
    out_shape = tuple(x.shape[d] for d in kept)
    count = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    rows = moved.reshape(int(np.prod(out_shape, dtype=np.int64)), count)
    return rows, out_shape


def float_fold(op, row, dtype):
    """Exact result (rounded to dtype) and the error bound a double accumulation may add."""
    vals = [float(v) for v in row]
    n = len(vals)
    u = 2.0 ** -53
    if op in ("reduce_max", "reduce_min"):
        if any(math.isnan(v) for v in vals):
            return NAN, 0.0
        if not vals:
            return -INF if op == "reduce_max" else INF, 0.0
        return (max if op == "reduce_max" else min)(vals), 0.0
    if any(not math.isfinite(v) for v in vals):
        with np.errstate(all="ignore"):
            r = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_prod": np.prod}[op](np.array(vals))
        return round_binary(float(r), dtype), 0.0
    if op == "reduce_prod":
        exact = Fraction(1)
        for v in vals:
            exact *= Fraction(v)
        want = round_binary(exact, dtype) if exact != 0 else 0.0
        return want, ulp_at(want, dtype) + 1.01 * n * u * abs(float(exact))
    exact = sum((Fraction(v) for v in vals), Fraction(0))
    magnitude = math.fsum(abs(v) for v in vals)
    if op == "reduce_mean":
        if n == 0:
            return NAN, 0.0
        exact /= n
        want = round_binary(exact, dtype) if exact != 0 else 0.0
        return want, ulp_at(want, dtype) + 1.01 * (n * u * magnitude / n + u * abs(want))
    want = round_binary(exact, dtype) if exact != 0 else 0.0
    return want, ulp_at(want, dtype) + 1.01 * n * u * magnitude


def reduction_case(name, op, x, dtype, axes, keepdims):
    norm_axes = sorted(a % x.ndim for a in axes) if axes is not None else list(range(x.ndim))
    rows, out_shape = reduce_rows(x, norm_axes)
    if keepdims:
        out_shape = tuple(1 if d in norm_axes else x.shape[d] for d in range(x.ndim))
    attrs = {}
    if axes is not None:
        attrs["axes"] = axes
    if keepdims:
        attrs["keepdims"] = True
    if dtype in FLOATS:
        results = [float_fold(op, row, dtype) for row in rows]
        want = np.array([r[0] for r in results], dtype=np.float64).reshape(out_shape)
        tol = np.array([r[1] for r in results], dtype=np.float64).reshape(out_shape)
        exact = op in ("reduce_max", "reduce_min")
        case(name, op, "exact" if exact else "bound", [(x, dtype)], (want, dtype), attrs, None if exact else tol)
        return
    lo, hi = (0, 1) if dtype == "bool" else (-(1 << (INT_BITS[dtype] - 1)), (1 << (INT_BITS[dtype] - 1)) - 1)
    fold = {
        "reduce_sum": lambda r: sum(int(v) for v in r),
        "reduce_prod": lambda r: math.prod(int(v) for v in r),
        "reduce_max": lambda r: max([int(v) for v in r], default=lo),
        "reduce_min": lambda r: min([int(v) for v in r], default=hi),
        "reduce_any": lambda r: int(any(r)),
        "reduce_all": lambda r: int(all(r)),
    }[op]
    want = np.array([wrap(fold(row), dtype) for row in rows], dtype=object).reshape(out_shape)
    case(name, op, "exact", [(x, dtype)], (want, dtype), attrs)


def arg_case(name, op, x, dtype, axis, keepdims=False):
    a = axis % x.ndim
    rows, out_shape = reduce_rows(x, [a])
    if keepdims:
        out_shape = tuple(1 if d == a else x.shape[d] for d in range(x.ndim))

    def pick(row):
        vals = [float(v) for v in row]
        for i, v in enumerate(vals):
            if math.isnan(v):
                return i
        best = max(vals) if op == "argmax" else min(vals)
        return vals.index(best)

    want = np.array([pick(r) for r in rows], dtype=object).reshape(out_shape)
    attrs = {"axes": [axis]}
    if keepdims:
        attrs["keepdims"] = True
    case(name, op, "exact", [(x, dtype)], (want, "i64"), attrs)


def reduction_cases():
    float_ops = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_mean"]
    for op in float_ops:
        reduction_case(f"{op}_f32_axis1", op, grid((2, 3, 4), "f32", 40), "f32", [1], False)
        reduction_case(f"{op}_f32_axes02_keepdims", op, grid((2, 3, 4), "f32", 41), "f32", [0, -1], True)
        reduction_case(f"{op}_f64_axis2", op, grid((2, 3, 4), "f64", 42), "f64", [2], False)
        reduction_case(f"{op}_f64_all", op, grid((2, 3, 4), "f64", 43), "f64", None, False)
        reduction_case(f"{op}_f32_empty_axis", op, np.zeros((2, 0), dtype=np.float64), "f32", [1], False)
        specials = to_dtype(np.array([[1.0, NAN, 2.0], [INF, 1.0, -INF], [INF, 2.0, 1.0], [-0.0, -0.0, -0.0]]), "f32")
        reduction_case(f"{op}_f32_specials", op, specials, "f32", [1], False)
    reduction_case("reduce_sum_f32_no_axes", "reduce_sum", grid((2, 3), "f32", 44), "f32", [], False)
    reduction_case("reduce_sum_f32_scalar", "reduce_sum", grid((), "f32", 45), "f32", None, False)
    cancel = to_dtype(np.array([[1e8, 1.0, -1e8, 1e-3], [3.0, 1e30, 1.0, -1e30]]), "f64")
    reduction_case("reduce_sum_f64_cancellation", "reduce_sum", cancel, "f64", [1], False)
    reduction_case("reduce_sum_f32_long_row", "reduce_sum", grid((2, 300), "f32", 46), "f32", [1], False)
    for dtype in ("f16", "bf16"):
        reduction_case(f"reduce_sum_{dtype}_axis2", "reduce_sum", grid((2, 3, 4), dtype, 47), dtype, [2], False)
        reduction_case(f"reduce_mean_{dtype}_axis1", "reduce_mean", grid((2, 3, 4), dtype, 48), dtype, [1], True)
        reduction_case(f"reduce_max_{dtype}_all", "reduce_max", grid((2, 3, 4), dtype, 49), dtype, None, False)
    # f16 would stall at 2048 if it accumulated in f16: the exact sum is 2050.
    stall = to_dtype(np.array([2048.0, 1.0, 1.0]), "f16")
    reduction_case("reduce_sum_f16_accumulates_wide", "reduce_sum", stall, "f16", [0], False)

    for dtype in INTS:
        lo, hi = -(1 << (INT_BITS[dtype] - 1)), (1 << (INT_BITS[dtype] - 1)) - 1
        x = np.array([[hi, 1, 5, -2], [lo, -1, 3, 7], [100, 100, 100, 2]], dtype=object)
        for op in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
            reduction_case(f"{op}_{dtype}_wraps", op, x, dtype, [1], False)
        reduction_case(f"reduce_sum_{dtype}_axis0_keepdims", "reduce_sum", x, dtype, [0], True)
    for op in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        reduction_case(f"{op}_i32_empty_axis", op, np.zeros((3, 0), dtype=object), "i32", [1], False)
    b = grid((3, 4), "bool", 50)
    b[0, :] = 1
    b[1, :] = 0
    for op in ("reduce_any", "reduce_all"):
        reduction_case(f"{op}_bool_axis1", op, b, "bool", [1], False)
        reduction_case(f"{op}_bool_all_keepdims", op, b, "bool", None, True)
        reduction_case(f"{op}_bool_empty_axis", op, np.zeros((2, 0), dtype=object), "bool", [1], False)

    ties = to_dtype(np.array([[1.0, 3.0, 3.0, -1.0, 3.0], [NAN, 1.0, NAN, 5.0, 0.0], [-INF, -INF, -INF, -INF, -INF],
                              [2.0, 1.0, NAN, 9.0, -9.0], [0.0, -0.0, 0.0, -0.0, 0.0]]), "f32")
    for op in ("argmax", "argmin"):
        arg_case(f"{op}_f32_ties_nan", op, ties, "f32", 1)
        arg_case(f"{op}_f32_axis0_keepdims", op, ties, "f32", 0, True)
        arg_case(f"{op}_f64_axis_neg1", op, grid((2, 3, 4), "f64", 51), "f64", -1)
        arg_case(f"{op}_bf16", op, to_dtype(np.round(grid((3, 4), "f32", 52)), "bf16"), "bf16", 1)
        xi = np.array([[3, 7, 7, -2], [-128, 5, -128, 5], [0, 0, 0, 0]], dtype=object)
        arg_case(f"{op}_i8_ties", op, xi, "i8", 1)
        arg_case(f"{op}_i64_axis0", op, grid((4, 3), "i64", 53), "i64", 0)

# ---------------------------------------------------------------- layout and data movement

def layout_cases():
    x = grid((3, 1), "f32", 60)
    case("broadcast_f32", "broadcast", "signed", [(x, "f32")], (np.broadcast_to(x, (2, 3, 4)), "f32"),
         {"shape": [2, 3, 4]})
    b = grid((1, 3), "bool", 61)
    case("broadcast_bool", "broadcast", "exact", [(b, "bool")], (np.broadcast_to(b, (2, 3)), "bool"), {"shape": [2, 3]})
    s = np.array(-7, dtype=object)
    case("broadcast_i8_scalar", "broadcast", "exact", [(s, "i8")], (np.broadcast_to(s, (2, 2)), "i8"), {"shape": [2, 2]})
    case("broadcast_f64_to_empty", "broadcast", "exact", [(grid((3,), "f64", 62), "f64")],
         (np.zeros((0, 3)), "f64"), {"shape": [0, 3]})

    x = grid((2, 3, 4), "f32", 63)
    case("reshape_f32", "reshape", "signed", [(x, "f32")], (x.reshape(4, 6), "f32"), {"shape": [4, 6]})
    case("reshape_f32_infer", "reshape", "signed", [(x, "f32")], (x.reshape(3, -1), "f32"), {"shape": [3, -1]})
    xi = grid((6,), "i64", 64)
    case("reshape_i64_to_scalar_dims", "reshape", "exact", [(xi, "i64")], (xi.reshape(1, 2, 1, 3), "i64"),
         {"shape": [1, 2, 1, 3]})

    case("transpose_f32_default", "transpose", "signed", [(x, "f32")], (np.transpose(x), "f32"))
    case("transpose_f32_perm201", "transpose", "signed", [(x, "f32")], (np.transpose(x, (2, 0, 1)), "f32"),
         {"perm": [2, 0, 1]})
    xb = grid((3, 5), "bf16", 65)
    case("transpose_bf16", "transpose", "signed", [(xb, "bf16")], (xb.T, "bf16"), {"perm": [1, 0]})
    xo = grid((2, 3), "bool", 66)
    case("transpose_bool", "transpose", "exact", [(xo, "bool")], (xo.T, "bool"), {"perm": [1, 0]})

    y = grid((5, 6), "f32", 67)
    case("slice_f32_steps", "slice", "signed", [(y, "f32")], (y[1:5:2, 0:6:4], "f32"),
         {"start": [1, 0], "stop": [5, 6], "step": [2, 4]})
    case("slice_f32_negative_and_clamped", "slice", "signed", [(y, "f32")], (y[-3:100, -5:-1], "f32"),
         {"start": [-3, -5], "stop": [100, -1]})
    yi = grid((4, 7), "i32", 68)
    case("slice_i32_step3", "slice", "exact", [(yi, "i32")], (yi[:, 1::3], "i32"),
         {"start": [0, 1], "stop": [4, 7], "step": [1, 3]})
    case("slice_i32_empty", "slice", "exact", [(yi, "i32")], (yi[3:1], "i32"), {"start": [3, 0], "stop": [1, 7]})

    a, b, c = grid((2, 1), "f32", 69), grid((2, 3), "f32", 70), grid((2, 2), "f32", 71)
    case("concat_f32_three_axis1", "concat", "signed", [(a, "f32"), (b, "f32"), (c, "f32")],
         (np.concatenate([a, b, c], axis=1), "f32"), {"axis": 1})
    p, q, r = grid((1, 3), "bool", 72), grid((2, 3), "bool", 73), grid((0, 3), "bool", 74)
    case("concat_bool_axis0_with_empty", "concat", "exact", [(p, "bool"), (q, "bool"), (r, "bool")],
         (np.concatenate([p, q, r], axis=0), "bool"), {"axis": 0})
    u, v = grid((2, 2, 1), "i64", 75), grid((2, 2, 2), "i64", 76)
    case("concat_i64_axis_neg1", "concat", "exact", [(u, "i64"), (v, "i64")],
         (np.concatenate([u, v], axis=-1), "i64"), {"axis": -1})

    z = grid((2, 3), "f32", 77)
    case("pad_f32_value", "pad", "signed", [(z, "f32")],
         (np.pad(z, ((1, 0), (2, 1)), constant_values=1.5), "f32"), {"low": [1, 2], "high": [0, 1], "value": 1.5})
    case("pad_f32_rounds_value", "pad", "signed", [(z, "f32")],
         (np.pad(z, ((0, 1), (0, 0)), constant_values=round_binary(0.1, "f32")), "f32"),
         {"low": [0, 0], "high": [1, 0], "value": 0.1})
    zi = grid((3,), "i32", 78)
    case("pad_i32_value", "pad", "exact", [(zi, "i32")], (np.pad(zi, (2, 3), constant_values=-7), "i32"),
         {"low": [2], "high": [3], "value": -7})
    zb = grid((2, 2), "bool", 79)
    case("pad_bool_true", "pad", "exact", [(zb, "bool")], (np.pad(zb, ((1, 1), (0, 1)), constant_values=1), "bool"),
         {"low": [1, 0], "high": [1, 1], "value": True})
    case("pad_f16_default_zero", "pad", "signed", [(grid((2,), "f16", 80), "f16")],
         (np.pad(grid((2,), "f16", 80), (1, 1)), "f16"), {"low": [1], "high": [1]})

    g = grid((3, 5), "f32", 81)
    idx = np.array([4, -1, 0, -5, 2], dtype=object)
    case("gather_f32_axis1_negative", "gather", "signed", [(g, "f32"), (idx, "i64")],
         (np.take(g, idx.astype(np.int64), axis=1), "f32"), {"axis": 1})
    idx2 = np.array([[2, -3], [1, 1]], dtype=object)
    case("gather_f32_axis0_2d_indices", "gather", "signed", [(g, "f32"), (idx2, "i32")],
         (np.take(g, idx2.astype(np.int64), axis=0), "f32"))
    gi = grid((2, 3, 4), "i8", 82)
    idx3 = np.array(-2, dtype=object)
    case("gather_i8_scalar_index", "gather", "exact", [(gi, "i8"), (idx3, "i32")],
         (np.take(gi, -2, axis=1), "i8"), {"axis": 1})
    case("gather_f64_empty_indices", "gather", "exact", [(grid((3, 2), "f64", 83), "f64"),
                                                          (np.zeros((0,), dtype=object), "i64")],
         (np.zeros((0, 2)), "f64"), {"axis": 0})

    for dtype, shape, axis in [("i32", (3, 4), 1), ("i64", (2, 3, 2), 0), ("f32", (4, 3), -1), ("i8", (300,), 0),
                               ("f16", (2100,), 0), ("bf16", (2, 300), 1)]:
        ax = axis % len(shape)
        ind = np.indices(shape)[ax]
        case(f"iota_{dtype}_axis{ax}", "iota", "exact", [], (to_dtype(ind.astype(object), dtype) if dtype not in FLOATS
                                                             else to_dtype(ind.astype(np.float64), dtype), dtype),
             {"shape": list(shape), "axis": axis, "dtype": dtype})

    for dtype, value, shape in [("f32", 0.1, [2, 3]), ("f64", -2.5, [4]), ("i8", -5, [2, 2]), ("bool", True, [3]),
                                ("bf16", 0.1, []), ("f16", 70000.0, [2]), ("i64", 2**62, [1, 1])]:
        if dtype in FLOATS:
            want = np.full(shape, round_binary(value, dtype))
        else:
            want = np.full(shape, int(value), dtype=object)
        case(f"constant_{dtype}", "constant", "signed" if dtype in FLOATS else "exact", [], (want, dtype),
             {"value": value, "shape": shape, "dtype": dtype})

# ---------------------------------------------------------------- dot

def dot_case(name, a, b, dtype):
    fa = np.vectorize(lambda v: Fraction(v) if dtype in FLOATS else int(v), otypes=[object])(a)
    fb = np.vectorize(lambda v: Fraction(v) if dtype in FLOATS else int(v), otypes=[object])(b)
    exact = np.matmul(fa, fb)
    if dtype not in FLOATS:
        case(name, "dot", "exact", [(a, dtype), (b, dtype)], (to_dtype(exact, dtype), dtype))
        return
    want = np.vectorize(lambda v: round_binary(Fraction(v), dtype), otypes=[np.float64])(exact) \
        if np.asarray(exact).size else np.zeros(np.shape(exact))
    k = np.shape(a)[-1]
    magnitude = np.matmul(np.abs(np.asarray(a, dtype=np.float64)), np.abs(np.asarray(b, dtype=np.float64)))
    ulps = np.vectorize(lambda v: ulp_at(float(v), dtype), otypes=[np.float64])(want) if want.size else want
    tol = ulps + 1.01 * (k + 1) * 2.0 ** -53 * magnitude
    case(name, "dot", "bound", [(a, dtype), (b, dtype)], (want, dtype), None, tol)


def dot_cases():
    dot_case("dot_f32_matrix", grid((3, 4), "f32", 90), grid((4, 5), "f32", 91), "f32")
    dot_case("dot_f64_matrix", grid((3, 4), "f64", 92), grid((4, 2), "f64", 93), "f64")
    dot_case("dot_f32_vector_vector", grid((5,), "f32", 94), grid((5,), "f32", 95), "f32")
    dot_case("dot_f32_vector_matrix", grid((4,), "f32", 96), grid((4, 3), "f32", 97), "f32")
    dot_case("dot_f64_matrix_vector", grid((3, 4), "f64", 98), grid((4,), "f64", 99), "f64")
    dot_case("dot_f32_batched", grid((2, 3, 4), "f32", 100), grid((2, 4, 2), "f32", 101), "f32")
    dot_case("dot_f32_batch_broadcast", grid((2, 1, 3, 4), "f32", 102), grid((3, 4, 2), "f32", 103), "f32")
    dot_case("dot_f32_vector_batched", grid((4,), "f32", 104), grid((2, 4, 3), "f32", 105), "f32")
    dot_case("dot_f16_matrix", grid((2, 8), "f16", 106), grid((8, 3), "f16", 107), "f16")
    dot_case("dot_bf16_matrix", grid((2, 8), "bf16", 108), grid((8, 3), "bf16", 109), "bf16")
    dot_case("dot_f32_zero_k", np.zeros((3, 0)), np.zeros((0, 2)), "f32")
    dot_case("dot_f32_zero_m", np.zeros((0, 4)), grid((4, 2), "f32", 110), "f32")
    dot_case("dot_i32_matrix", grid((3, 4), "i32", 111), grid((4, 2), "i32", 112), "i32")
    big = np.array([[100, 100, 100]], dtype=object)
    dot_case("dot_i8_wraps", big, big.T.copy(), "i8")
    dot_case("dot_i64_batched", grid((2, 2, 3), "i64", 113), grid((3, 2), "i64", 114), "i64")

# ---------------------------------------------------------------- composites

def composite_tol(want, dtype):
    # The expansion is at most ~8 primitive ops, each rounding once to the dtype,
    # on O(1) intermediates: 32 eps * (1 + |y|) is that budget with a margin.
    p = FLOAT_FORMATS[dtype][0]
    return 32 * 2.0 ** (1 - p) * (1.0 + np.abs(want))


def composite_case(name, op, inputs, dtype, ref, attrs):
    with np.errstate(all="ignore"):
        y = ref(*[np.asarray(v, dtype=np.float64) for v in inputs])
    want = to_dtype(y, dtype)
    case(name, op, "bound", [(v, dtype) for v in inputs], (want, dtype), attrs, composite_tol(want, dtype))


def composite_cases():
    def softmax(x, axis=-1):
        e = LIBM["exp"](x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)

    def log_softmax(x):
        m = np.max(x, axis=-1, keepdims=True)
        return x - m - LIBM["log"](np.sum(LIBM["exp"](x - m), axis=-1, keepdims=True))

    def layer_norm(x, gamma=None, beta=None, eps=1e-5):
        mean = np.mean(x, axis=-1, keepdims=True)
        var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
        y = (x - mean) / np.sqrt(var + eps)
        if gamma is not None:
            y = y * gamma
        if beta is not None:
            y = y + beta
        return y

    def rms_norm(x, gamma, eps=1e-6):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma

    x35 = grid((3, 5), "f32", 120, scale=3.0)
    composite_case("softmax_f32", "softmax", [x35], "f32", softmax, {"axis": -1})
    composite_case("softmax_f64_axis0", "softmax", [grid((3, 5), "f64", 121, 3.0)], "f64",
                   lambda x: softmax(x, 0), {"axis": 0})
    composite_case("softmax_f16", "softmax", [grid((2, 6), "f16", 122, 3.0)], "f16", softmax, {})
    composite_case("log_softmax_f32", "log_softmax", [x35], "f32", log_softmax, {})
    composite_case("logsumexp_f32", "logsumexp", [x35], "f32",
                   lambda x: LIBM["log"](np.sum(LIBM["exp"](x), axis=1)), {"axes": [1]})
    x46, g6, b6 = grid((4, 6), "f32", 123, 3.0), grid((6,), "f32", 124), grid((6,), "f32", 125)
    composite_case("layer_norm_f32", "layer_norm", [x46, g6, b6], "f32", layer_norm, {"axes": [-1], "eps": 1e-5})
    composite_case("layer_norm_f64_no_affine", "layer_norm", [grid((3, 8), "f64", 126, 3.0)], "f64", layer_norm, {})
    composite_case("rms_norm_f32", "rms_norm", [x46, g6], "f32", rms_norm, {})
    composite_case("gelu_f32", "gelu", [x35], "f32",
                   lambda x: 0.5 * x * (1.0 + LIBM["erf"](x / math.sqrt(2.0))), {})
    composite_case("gelu_tanh_f32", "gelu", [x35], "f32",
                   lambda x: 0.5 * x * (1.0 + LIBM["tanh"](math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
                   {"approximate": "tanh"})
    composite_case("silu_f64", "silu", [grid((2, 5), "f64", 127, 3.0)], "f64", lambda x: x * sigmoid(x), {})


def main():
    unary_cases()
    binary_cases()
    broadcast_cases()
    select_clamp_cases()
    cast_cases()
    reduction_cases()
    layout_cases()
    dot_cases()
    composite_cases()
    write_all()
    size = sum(f.stat().st_size for f in GOLDEN.rglob("*") if f.is_file())
    print(f"{len(CASES)} cases, {size} bytes in {GOLDEN}")


if __name__ == "__main__":
    main()
