"""A PyKokkos-compatible front end (docs/pykokkos.md): `import stitch.pykokkos as pk`.

Workunits are Python functions whose body is translated, from its `ast`, into Stitch's
kernel language; `pk.parallel_for` and `pk.parallel_reduce` record calls of them on
lazy arrays (`pk.View`), which Stitch fuses and runs when a value is read, or at
`pk.fence()`. What lies outside the translated subset is a `stitch.Error` naming the
construct, the file and the line.
"""

import ast
import builtins
import enum
import inspect
import math
import textwrap
import time

import numpy as np

from . import _stitch

__all__ = [
    "Acc", "ExecutionSpace", "MDRangePolicy", "RangePolicy", "Timer", "View", "View1D", "View2D", "View3D",
    "double", "fence", "float", "float32", "float64", "flush", "int32", "int64", "parallel_for",
    "parallel_reduce", "set_default_space", "set_mode", "workunit",
]


# ------------------------------------------------------------------ dtypes


class DataType:
    def __init__(self, name, numpy):
        self.name = name  # Stitch's dtype name
        self.numpy = np.dtype(numpy)

    def __repr__(self):
        return f"pk.{self.numpy.name}"


float64 = double = DataType("f64", np.float64)
float32 = DataType("f32", np.float32)
int32 = DataType("i32", np.int32)
int64 = DataType("i64", np.int64)
float = float32  # noqa: A001  (PyKokkos's name)
_BY_NUMPY = {t.numpy: t for t in (float64, float32, int32, int64)}
_BY_NUMPY[np.dtype(np.bool_)] = DataType("bool", np.bool_)


def _dtype_of(value):
    if isinstance(value, DataType):
        return value
    if value is builtins.float:
        return float64
    if value is builtins.int:
        return int64
    try:
        return _BY_NUMPY[np.dtype(value)]
    except (KeyError, TypeError):
        raise _stitch.Error(f"error: {value!r} is not a pykokkos dtype (pk.double, pk.float, pk.int32, pk.int64)")


# ------------------------------------------------------------------ spaces and runtimes


class ExecutionSpace(enum.Enum):
    OpenMP = "cpu"
    Cuda = "cuda"
    Default = "default"


_default_space = ExecutionSpace.OpenMP
_mode = "fused"
_runtimes = {}


def set_default_space(space):
    global _default_space
    _default_space = space


def set_mode(mode):
    """Stitch's own: how later runtimes run calls ("fused", "unfused", "eager", ...)."""
    global _mode
    fence()
    _mode = mode
    _runtimes.clear()


def _runtime(space=None):
    space = space or _default_space
    if space is ExecutionSpace.Default:
        space = _default_space if _default_space is not ExecutionSpace.Default else ExecutionSpace.OpenMP
    rt = _runtimes.get(space)
    if rt is None:
        rt = _runtimes[space] = _stitch.LazyRuntime(mode=_mode, backend=space.value)
    return rt


def fence():
    """Runs every recorded call."""
    for rt in _runtimes.values():
        rt.flush()


flush = fence


class Timer:
    def __init__(self):
        self._start = time.perf_counter()

    def seconds(self):
        return time.perf_counter() - self._start

    def reset(self):
        self._start = time.perf_counter()


# ------------------------------------------------------------------ views


class _Annotation:
    """View1D[pk.double], Acc[pk.double]: type hints only, read for the dtype."""

    def __init__(self, kind, rank, dtype=None):
        self.kind, self.rank, self.dtype = kind, rank, dtype

    def __getitem__(self, dtype):
        return _Annotation(self.kind, self.rank, _dtype_of(dtype))


View1D = _Annotation("view", 1)
View2D = _Annotation("view", 2)
View3D = _Annotation("view", 3)
Acc = _Annotation("acc", 0)


class View:
    """An array on a space, zero-initialised, whose writes by kernels are lazy."""

    def __init__(self, shape, dtype=double, space=None, trait=None):
        del trait  # PyKokkos's memory traits have no meaning here
        if isinstance(shape, int):
            shape = [shape]
        self.dtype = _dtype_of(dtype)
        self.space = space or _default_space
        self._array = _runtime(self.space).zeros([int(s) for s in shape], self.dtype.name)
        self._kind = ("array", self.dtype.name, len(shape))  # what a kernel's key says of it

    @property
    def shape(self):
        return self._array.shape

    def __len__(self):
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        # The view's own memory, no copy, after running the pending calls that touch it;
        # writes through it are seen by the kernels that run after them.
        a = np.asarray(self._array)
        return a if dtype is None else a.astype(dtype)

    def __getitem__(self, index):
        return np.asarray(self._array)[index]

    def __setitem__(self, index, value):
        np.asarray(self._array)[index] = value

    def fill(self, value):
        np.asarray(self._array)[...] = value


# ------------------------------------------------------------------ policies


class RangePolicy:
    def __init__(self, *args):
        if args and isinstance(args[0], ExecutionSpace):
            self.space, args = args[0], args[1:]
        else:
            self.space = None
        if len(args) != 2:
            raise _stitch.Error("error: pk.RangePolicy takes (space, begin, end) or (begin, end)")
        self.begin, self.end = [int(args[0])], [int(args[1])]


class MDRangePolicy:
    def __init__(self, *args, **kwargs):
        if args and isinstance(args[0], ExecutionSpace):
            self.space, args = args[0], args[1:]
        else:
            self.space = kwargs.get("space")
        if len(args) < 2 or len(args[0]) != len(args[1]):
            raise _stitch.Error("error: pk.MDRangePolicy takes (begin, end) lists of one length")
        self.begin, self.end = [int(b) for b in args[0]], [int(e) for e in args[1]]


def _policy(p):
    if isinstance(p, (RangePolicy, MDRangePolicy)):
        return p
    if isinstance(p, (builtins.int, np.integer)):
        return RangePolicy(0, int(p))
    raise _stitch.Error(f"error: a policy is an int thread count, pk.RangePolicy or pk.MDRangePolicy, not {p!r}")


# ------------------------------------------------------------------ translation


_MATH = {
    "exp": "exp", "log": "log", "log2": "log2", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
    "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh", "erf": "erf", "floor": "floor", "ceil": "ceil",
    "fabs": "abs", "abs": "abs", "pow": "pow", "atan2": "atan2", "fmin": "min", "fmax": "max",
}
_FLOAT_RESULT = {"exp", "log", "log2", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "erf", "pow", "atan2"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%", ast.FloorDiv: "/"}
_BITOPS = {ast.BitXor: "xor", ast.BitAnd: "and", ast.BitOr: "or"}  # elementwise ops of ops.def, on integers
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_WIDTH = {"bool": 0, "i32": 1, "i64": 2, "f32": 3, "f64": 4}


def _is_float(t):
    return t in ("f32", "f64")


class _Translator:
    """A workunit's body as kernel-language statements, with each expression's dtype
    tracked so that mixed int/float arithmetic is converted as Python and C++ would."""

    def __init__(self, fn_name, file, first_line, arrays, scalars, acc):
        self.fn_name, self.file, self.first_line = fn_name, file, first_line
        self.arrays = arrays    # name -> (dtype, rank)
        self.names = dict(scalars)  # name -> dtype (scalars, indices, loop variables, locals)
        self.acc = acc          # (name, dtype) or None
        self.subst = {}         # an index name -> the expression it stands for (ranges not from 0)
        self.lines = []
        self.depth = 1
        self.serial = 0

    def fail(self, node, what):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + 1
        raise _stitch.Error(f"{self.file}:{line}:{col}: error: workunit '{self.fn_name}': {what} is not supported "
                            "in a workunit (docs/pykokkos.md)")

    def emit(self, text):
        self.lines.append("  " * self.depth + text)

    # expressions: (text, dtype or None for an untyped literal)
    def cast(self, expr, dtype):
        text, t = expr
        if t is None or t == dtype:
            return text
        return f"{dtype}({text})"

    def unify(self, a, b, node, want_float=False):
        ta, tb = a[1], b[1]
        if ta is None and tb is None:
            t = "f64" if want_float or "." in a[0] + b[0] else None
        elif ta is None or tb is None:
            t = ta or tb
            lit = a if ta is None else b
            if not _is_float(t) and ("." in lit[0] or "e" in lit[0].lower() or want_float):
                t = "f64"
        else:
            t = ta if _WIDTH[ta] >= _WIDTH[tb] else tb
            if _is_float(ta) != _is_float(tb):
                t = ta if _is_float(ta) else tb
        if want_float and t is not None and not _is_float(t):
            t = "f64"
        return t

    def expr(self, node):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return ("true" if node.value else "false", "bool")
            if isinstance(node.value, builtins.int):
                return (str(node.value), None)
            if isinstance(node.value, builtins.float):
                if math.isinf(node.value):
                    return ("inf" if node.value > 0 else "-inf", "f64")
                return (repr(node.value), None)
            self.fail(node, f"the constant {node.value!r}")
        if isinstance(node, ast.Name):
            if node.id in self.subst:
                return (self.subst[node.id], "i64")
            if node.id in self.names:
                return (node.id, self.names[node.id])
            if node.id in self.arrays:
                self.fail(node, f"the view '{node.id}' used without an index")
            self.fail(node, f"the name '{node.id}' (not a parameter, index or local)")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("math", "pk"):
            if node.attr in ("pi", "e", "inf"):
                return (repr(getattr(math, node.attr)), "f64")
            self.fail(node, f"'{node.value.id}.{node.attr}'")
        if isinstance(node, ast.Subscript):
            return self.element(node)
        if isinstance(node, ast.UnaryOp):
            v = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                return (f"(-{v[0]})", v[1])
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Not):
                return (f"(!{self.cast(v, 'bool')})", "bool")
            self.fail(node, "the operator ~")
        if isinstance(node, ast.BinOp):
            a, b = self.expr(node.left), self.expr(node.right)
            if isinstance(node.op, ast.Pow):
                t = self.unify(a, b, node, want_float=True)
                return (f"pow({self.cast(a, t)}, {self.cast(b, t)})", t)
            if type(node.op) in _BITOPS:
                t = self.unify(a, b, node)
                if t is not None and _is_float(t):
                    self.fail(node, f"the bitwise operator {type(node.op).__name__} on floats")
                return (f"{_BITOPS[type(node.op)]}({self.cast(a, t)}, {self.cast(b, t)})", t)
            op = _BINOPS.get(type(node.op))
            if op is None:
                self.fail(node, f"the operator {type(node.op).__name__}")
            t = self.unify(a, b, node, want_float=isinstance(node.op, ast.Div))
            if isinstance(node.op, ast.FloorDiv) and t is not None and _is_float(t):
                return (f"floor({self.cast(a, t)} / {self.cast(b, t)})", t)
            return (f"({self.cast(a, t)} {op} {self.cast(b, t)})", t)
        if isinstance(node, ast.BoolOp):
            op = "&&" if isinstance(node.op, ast.And) else "||"
            return ("(" + f" {op} ".join(self.cast(self.expr(v), "bool") for v in node.values) + ")", "bool")
        if isinstance(node, ast.Compare):
            parts, left = [], node.left
            for op, right in zip(node.ops, node.comparators):
                sym = _CMPOPS.get(type(op))
                if sym is None:
                    self.fail(node, f"the comparison {type(op).__name__}")
                a, b = self.expr(left), self.expr(right)
                t = self.unify(a, b, node)
                parts.append(f"({self.cast(a, t)} {sym} {self.cast(b, t)})")
                left = right
            return ("(" + " && ".join(parts) + ")", "bool")
        if isinstance(node, ast.IfExp):
            c = self.cast(self.expr(node.test), "bool")
            a, b = self.expr(node.body), self.expr(node.orelse)
            t = self.unify(a, b, node)
            return (f"select({c}, {self.cast(a, t)}, {self.cast(b, t)})", t)
        if isinstance(node, ast.Call):
            return self.call(node)
        self.fail(node, f"the expression {type(node).__name__}")

    def element(self, node):
        indices, base = [], node
        while isinstance(base, ast.Subscript):
            s = base.slice
            items = s.elts if isinstance(s, ast.Tuple) else [s]
            indices = list(items) + indices
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in self.arrays:
            self.fail(node, "indexing something that is not a view")
        dtype, rank = self.arrays[base.id]
        if len(indices) != rank:
            self.fail(node, f"{len(indices)} indices into the {rank}-d view '{base.id}'")
        texts = []
        for i in indices:
            text, t = self.expr(i)
            if t is not None and _is_float(t):
                self.fail(i, "a float index")
            texts.append(text)
        return (f"{base.id}[{', '.join(texts)}]", dtype)

    def call(self, node):
        f = node.func
        name = None
        if isinstance(f, ast.Name):
            name = f.id
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("math", "pk"):
            name = f.attr
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in self.arrays:
            return self.extent(node, f.value.id)
        if node.keywords:
            self.fail(node, "a call with keyword arguments")
        args = [self.expr(a) for a in node.args]
        if name in ("float",) and len(args) == 1:
            return (self.cast(args[0], "f64") if args[0][1] is not None else f"f64({args[0][0]})", "f64")
        if name in ("int",) and len(args) == 1:
            return (f"i64({args[0][0]})", "i64")
        if name in ("min", "max") and len(args) == 2:
            t = self.unify(args[0], args[1], node)
            return (f"{name}({self.cast(args[0], t)}, {self.cast(args[1], t)})", t)
        if name in _MATH and len(args) in (1, 2):
            want_float = name in _FLOAT_RESULT
            t = args[0][1]
            if len(args) == 2:
                t = self.unify(args[0], args[1], node, want_float=want_float)
            elif want_float and (t is None or not _is_float(t)):
                t = "f64"
            elif t is None:
                t = "f64" if "." in args[0][0] else "i64"
            return (f"{_MATH[name]}(" + ", ".join(self.cast(a, t) for a in args) + ")", t)
        self.fail(node, f"the call of '{name or ast.unparse(f)}'")

    def extent(self, node, view):
        """view.extent(axis), PyKokkos's length of an axis: the view parameter's dimension."""
        rank = self.arrays[view][1]
        axis = node.args[0].value if len(node.args) == 1 and isinstance(node.args[0], ast.Constant) else None
        if (node.func.attr != "extent" or node.keywords or type(axis) is not builtins.int
                or not 0 <= axis < rank):
            self.fail(node, f"'{ast.unparse(node)}' (a view's only method is extent(axis), with a constant "
                            f"axis below its rank {rank})")
        return (f"{view}_d{axis}", "i64")

    # statements
    def block(self, stmts):
        for s in stmts:
            self.statement(s)

    def statement(self, node):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        if isinstance(node, ast.Pass):
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or node.value is None:
                self.fail(node, "an assignment to several targets")
            self.assign(targets[0], node.value, "=", node)
            return
        if isinstance(node, ast.AugAssign) and type(node.op) in _BITOPS:
            # x ^= v is x = x ^ v
            value = ast.BinOp(left=ast.Name(id=node.target.id, ctx=ast.Load()) if isinstance(node.target, ast.Name)
                              else node.target, op=node.op, right=node.value)
            ast.copy_location(value, node)
            self.assign(node.target, value, "=", node)
            return
        if isinstance(node, ast.AugAssign):
            op = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/="}.get(type(node.op))
            if op is None:
                self.fail(node, f"the augmented assignment {type(node.op).__name__}")
            if self.acc is not None and isinstance(node.target, ast.Name) and node.target.id == self.acc[0]:
                if op != "+=":
                    self.fail(node, "an accumulator updated other than with +=")
                self.emit(f"yield {self.cast(self.expr(node.value), self.acc[1])}")
                return
            self.assign(node.target, node.value, op, node)
            return
        if isinstance(node, ast.If):
            self.emit(f"if {self.cast(self.expr(node.test), 'bool')} {{")
            self.scoped(node.body)
            rest = node.orelse
            while len(rest) == 1 and isinstance(rest[0], ast.If):
                self.emit(f"}} else if {self.cast(self.expr(rest[0].test), 'bool')} {{")
                self.scoped(rest[0].body)
                rest = rest[0].orelse
            if rest:
                self.emit("} else {")
                self.scoped(rest)
            self.emit("}")
            return
        if isinstance(node, ast.For):
            self.loop(node)
            return
        self.fail(node, f"the statement {type(node).__name__}")

    def scoped(self, stmts):
        saved = dict(self.names)
        self.depth += 1
        self.block(stmts)
        self.depth -= 1
        self.names = saved

    def assign(self, target, value, op, node):
        if isinstance(target, ast.Subscript):
            text, dtype = self.element(target)
            self.emit(f"{text} {op} {self.cast(self.expr(value), dtype)}")
            return
        if not isinstance(target, ast.Name):
            self.fail(node, "an assignment to this target")
        name = target.id
        if name in self.arrays or (self.acc and name == self.acc[0]):
            self.fail(node, f"assigning to the parameter '{name}'")
        v = self.expr(value)
        if name in self.names:
            self.emit(f"{name} {op} {self.cast(v, self.names[name])}")
            return
        if op != "=":
            self.fail(node, f"'{name} {op} ...' before '{name}' is assigned")
        t = v[1] or ("f64" if "." in v[0] or "e" in v[0].lower() or "inf" in v[0] else "i64")
        self.emit(f"let {name}: {t} = {self.cast(v, t)}")
        self.names[name] = t

    def loop(self, node):
        it = node.iter
        if not (isinstance(node.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords):
            self.fail(node, "a for loop other than 'for v in range(stop)', 'range(start, stop)' or "
                            "'range(start, stop, step)'")
        step = 1
        if len(it.args) == 3:
            try:
                step = ast.literal_eval(it.args[2])
            except ValueError:
                step = None
            if type(step) is not builtins.int or step == 0:
                self.fail(it.args[2], "a range step other than a nonzero integer constant")
        var = node.target.id
        bounds = [self.cast(self.expr(a), "i64") for a in it.args[:2]]
        saved = dict(self.names)
        if len(bounds) == 1:
            self.emit(f"for {var} < {bounds[0]} {{")
            self.depth += 1
        else:
            # The kernel language counts from 0: the hidden counter runs over the
            # trip count, and the variable is start + counter * step.
            self.serial += 1
            hidden = f"pk_loop{self.serial}"
            start, stop = bounds
            if step == 1:
                count, value = f"({stop}) - ({start})", f"{hidden} + ({start})"
            elif step > 0:
                count, value = f"(({stop}) - ({start}) + {step - 1}) / {step}", f"({start}) + {hidden} * {step}"
            else:
                count = f"(({start}) - ({stop}) + {-step - 1}) / {-step}"
                value = f"({start}) - {hidden}" + (f" * {-step}" if step != -1 else "")
            self.emit(f"for {hidden} < {count} {{")
            self.depth += 1
            self.emit(f"let {var}: i64 = {value}")
        self.names[var] = "i64"
        self.block(node.body)
        self.depth -= 1
        self.emit("}")
        self.names = saved
        if node.orelse:
            self.fail(node, "a for loop's else")


class _Workunit:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        lines, self.first_line = inspect.getsourcelines(fn)
        self.file = inspect.getsourcefile(fn) or "<workunit>"
        tree = ast.parse(textwrap.dedent("".join(lines)))
        self.tree = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
        self.params = [a.arg for a in self.tree.args.args]
        self.hints = {}
        try:
            self.hints = {k: v for k, v in inspect.get_annotations(fn, eval_str=True).items()}
        except Exception:  # noqa: BLE001  (annotations naming what the function's module cannot evaluate)
            self.hints = {}
        self.kernels = {}
        self.calls = {}  # (rank, reduction, argument kinds in call order, ranges from 0) -> (kernel, parameters)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def kernel(self, rank, reduction, kinds, from_zero):
        key = (rank, reduction, tuple(sorted(kinds.items())), from_zero)
        k = self.kernels.get(key)
        if k is None:
            k = self.kernels[key] = self.translate(rank, reduction, kinds, from_zero)
        return k

    def translate(self, rank, reduction, kinds, from_zero):
        name = self.tree.name
        indices = self.params[:rank]
        rest = self.params[rank:]
        acc = None
        if reduction:
            if not rest:
                raise _stitch.Error(f"error: workunit '{name}' has no accumulator parameter after its indices")
            hint = self.hints.get(rest[0])
            acc_dtype = hint.dtype if isinstance(hint, _Annotation) and hint.dtype else double
            acc = (rest[0], acc_dtype.name)
            rest = rest[1:]
        arrays, scalars, params = {}, {i: "i64" for i in indices}, []
        for p in rest:
            if p not in kinds:
                raise _stitch.Error(f"error: workunit '{name}': no argument for parameter '{p}'")
            kind = kinds[p]
            if kind[0] == "array":
                dtype, rank_p = kind[1], kind[2]
                arrays[p] = (dtype, rank_p)
                dims = ", ".join(f"{p}_d{d}" for d in range(rank_p))
                params.append(f"{p}: {dtype}[{dims}]")
            else:
                scalars[p] = kind[1]
                params.append(f"{p}: {kind[1]}")
        # A range from 0 is the index itself; from b, the index stands for
        # pk_t + b, written into every use (the safety check reads indices
        # as written, and sees through no local).
        ranges = []
        for d in range(rank):
            if not from_zero[d]:
                params.append(f"pk_begin{d}: i64")
            params.append(f"pk_count{d}: i64")
            ranges.append(f"{indices[d] if from_zero[d] else f'pk_t{d}'} < pk_count{d}")
        t = _Translator(name, self.file, self.first_line, arrays, scalars, acc)
        for d, i in enumerate(indices):
            if not from_zero[d]:
                t.subst[i] = f"(pk_t{d} + pk_begin{d})"
        t.block(self.tree.body)
        result = f" -> sum {acc[1]}" if acc else ""
        over = ", ".join(ranges)
        text = f"kernel {name}({', '.join(params)}){result} over {over} {{\n" + "\n".join(t.lines) + "\n}\n"
        module = _stitch.parse(text, f"{self.file} (workunit {name}, translated)")
        return module.kernels[name]


def workunit(fn=None, **_):
    """@pk.workunit: the function's body runs once per index of the policy's range."""
    if fn is None:
        return lambda f: _Workunit(f)
    return _Workunit(fn)


# ------------------------------------------------------------------ dispatch


def _split(args, what):
    """([name,] policy, workunit) -> (begins, ends, space, workunit)."""
    if len(args) == 3 and isinstance(args[0], str):
        args = args[1:]  # the kernel's name, for profilers
    if len(args) != 2 or not isinstance(args[1], _Workunit):
        raise _stitch.Error(f"error: pk.{what} takes ([name,] policy, workunit, **arguments)")
    p = args[0]
    if type(p) is builtins.int:
        return (0,), (p,), None, args[1]
    p = _policy(p)
    return p.begin, p.end, p.space, args[1]


def _kind(name, v):
    """An argument's kind for the kernel key, and its value as the lazy call takes it."""
    if isinstance(v, View):
        return v._kind, v._array
    if isinstance(v, np.ndarray):
        return ("array", _dtype_of(v.dtype).name, v.ndim), v
    if isinstance(v, (bool, np.bool_)):
        return ("scalar", "bool"), bool(v)
    if isinstance(v, (builtins.int, np.integer)):
        return ("scalar", _dtype_of(v.dtype).name if isinstance(v, np.integer) else "i64"), int(v)
    if isinstance(v, (builtins.float, np.floating)):
        return ("scalar", _dtype_of(v.dtype).name if isinstance(v, np.floating) else "f64"), builtins.float(v)
    raise _stitch.Error(f"error: argument '{name}': {type(v).__name__} is not a view, array or number")


def _dispatch(args, kwargs, reduction):
    begins, ends, space, wu = _split(args, "parallel_reduce" if reduction else "parallel_for")
    rank = len(begins)
    kinds, values = [], {}
    for name, v in kwargs.items():
        kind, values[name] = _kind(name, v)
        kinds.append((name, kind))
        if space is None and isinstance(v, View):
            space = v.space
    rt = _runtime(space)
    written_back = []
    for name, v in values.items():
        if type(v) is np.ndarray:  # a numpy array as a view: in now, back once the call ran
            lazy = rt.array(v)
            written_back.append((v, lazy))
            values[name] = lazy
    from_zero = tuple(b == 0 for b in begins)
    key = (rank, reduction, tuple(kinds), from_zero)
    entry = wu.calls.get(key)
    if entry is None:
        entry = wu.calls[key] = (wu.kernel(rank, reduction, dict(kinds), from_zero),
                                 wu.params[rank + (1 if reduction else 0):])
    kernel, params = entry
    call_args = [values[p] for p in params if p in values]
    for b, e in zip(begins, ends):
        if b:
            call_args.append(b)
        call_args.append(e - b if e > b else 0)
    result = rt.reduce(kernel, *call_args) if reduction else rt.call(kernel, *call_args)
    for host, lazy in written_back:
        host[...] = lazy.numpy()
    return result


def parallel_for(*args, **kwargs):
    """pk.parallel_for([name,] policy, workunit, **arguments): recorded, run when needed."""
    _dispatch(args, kwargs, reduction=False)


def parallel_reduce(*args, **kwargs):
    """pk.parallel_reduce([name,] policy, workunit, **arguments): the sum of what the
    workunit adds to its accumulator (its first parameter after the indices)."""
    return _dispatch(args, kwargs, reduction=True).value()
