"""A tiny writer for `.stitch` graph text (DESIGN.md, Graph text format), shared by
the model generators in this folder (docs/models.md).

    g = Graph("mlp", header=["what the graph is"])
    x = g.param("x", "f32", [8, 16])
    w = g.param("w", "f32", [16, 4])
    y = g.let("y", "relu", call("dot", x, w))
    sys.stdout.write(g.text([(y, ttype("f32", [8, 4]))]))

Values are plain strings (their names); `call` builds a nested call, `let` a named
statement. Attribute values: bool, int, float, str (written quoted), `Word`
(written bare: a dtype), and lists of int/float.
"""
import argparse
import math
import sys


class Word(str):
    """An attribute value written without quotes (a dtype such as `f32`)."""


def _number(v):
    if isinstance(v, bool):
        raise TypeError("a bool is not a number operand")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        text = repr(v)
        if not any(c in text for c in ".en"):
            text += ".0"
        return text
    raise TypeError(f"not a number: {v!r}")


def _attr(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Word):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(i) for i in v) + "]"
    return _number(v)


def _operand(a):
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return _number(a)
    if isinstance(a, str):
        return a
    raise TypeError(f"bad operand {a!r}")


def call(op, *args, **attrs):
    """The text of a call `op(args..., key=value...)`, usable as an operand."""
    parts = [_operand(a) for a in args]
    parts += [f"{k}={_attr(v)}" for k, v in attrs.items()]
    return f"{op}({', '.join(parts)})"


def ttype(dtype, shape):
    """A tensor type such as `f32[8, 128]` (a scalar is `f32[]`)."""
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


class Graph:
    """One `graph` definition: parameters in order of declaration, then statements."""

    def __init__(self, name, header=()):
        self.name = name
        self.header = list(header)
        self.params = []
        self.lines = []
        self.names = set()

    def _define(self, name):
        if name in self.names:
            raise ValueError(f"value {name!r} defined twice")
        self.names.add(name)
        return name

    def param(self, name, dtype, shape):
        self.params.append(f"{self._define(name)}: {ttype(dtype, shape)}")
        return name

    def let(self, name, op, *args, **attrs):
        """`name = op(args..., attrs...)`; returns `name`."""
        self.lines.append(f"  {self._define(name)} = {call(op, *args, **attrs)}")
        return name

    def set(self, name, expr):
        """`name = expr` for an expression built with `call`; returns `name`."""
        self.lines.append(f"  {self._define(name)} = {expr}")
        return name

    def comment(self, text):
        self.lines.append(f"  # {text}")

    def text(self, outputs):
        """The graph's text; `outputs` is a list of (value, type text or None)."""
        out = [f"# {line}" if line else "#" for line in self.header]
        params = ",\n    ".join(self.params)
        types = [t for _, t in outputs]
        sig = f"graph {self.name}(\n    {params})"
        if all(t is not None for t in types):
            sig += f" -> ({', '.join(types)})"
        out.append(sig + " {")
        out += self.lines
        out.append(f"  return {', '.join(v for v, _ in outputs)}")
        out.append("}")
        return "\n".join(out) + "\n"


def parse_sizes(doc, sizes, flags=()):
    """Parses `--small` and one `--NAME N` option per entry of `sizes`
    (`name -> (default, small, help)`). `--small` switches every default to its small
    value; an explicit option still wins. `flags` are extra (args, kwargs) for
    `add_argument`. Returns the argparse namespace with every size filled in."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0],
                                     epilog="See the module docstring and docs/models.md.")
    parser.add_argument("--small", action="store_true",
                        help="tiny, non-power-of-two sizes for tests")
    for name, (default, small, help_text) in sizes.items():
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=int, default=None,
                            help=f"{help_text} (default {default}; --small: {small})")
    for a, kw in flags:
        parser.add_argument(*a, **kw)
    args = parser.parse_args()
    for name, (default, small, _) in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, small if args.small else default)
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    args.parser = parser
    return args


def command_line():
    """The command that generated the graph, for its header comment."""
    return "python3 bench/models/" + " ".join(
        [sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1]] + sys.argv[1:])
