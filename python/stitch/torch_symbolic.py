"""Dynamic shapes for the torch backend (docs/torch.md, Dynamic shapes).

Under `torch.compile(..., dynamic=True)`, or once Dynamo has seen a size change, a
graph's sizes are symbols (`s0`, `s1`, and expressions of them). A partition whose
inputs carry such symbols is written once as a `.stitch` graph whose dims are those
symbols, so one executable runs every size; Stitch binds the symbols per call.

The lowering (torch_lowering.py) works on plain ints. So the partition is lowered twice,
each time with every symbol given a different prime ("sentinel") as its size; a number
of the text that equals a symbol's sentinel in both lowerings becomes that symbol, and
the two texts must then be the same. Anything that depends on a size other than as a
dim of its own (a product of symbols such as a flattened [B*T, C], a mean's divisor, a
slice's bound) differs between the two and refuses the symbolic form: the partition is
then compiled per input shapes, as without dynamic shapes.
"""

import itertools
import logging
import re

import sympy
import torch

_NUMBER = re.compile(r"(?<![\w.\-])\d+(?![\w.])")


class Symbolic:
    """A partition's symbolic text: `declared` and `outputs` are its parameters' and
    outputs' shapes (as written) with a symbol's name where a dim is one; `locators` says where a
    call's arguments hold each symbol's extent: (name, argument index, dim or None for
    an int argument)."""

    __slots__ = ("text", "declared", "outputs", "locators", "orders")

    def __init__(self, text, declared, outputs, locators, orders):
        self.text, self.declared, self.outputs, self.locators = text, declared, outputs, locators
        self.orders = orders  # each output's order as written (torch_lowering.output_order), or None

    def extents(self, args):
        return {name: (args[i] if d is None else args[i].shape[d]) for name, i, d in self.locators}

    def extents_of_arrays(self, arrays, declared):
        """The symbols' extents from the parameters as passed (in their declared shapes)."""
        extents = {}
        for array, shape in zip(arrays, declared):
            extents.update((d, n) for d, n in zip(shape, array.shape) if isinstance(d, str))
        return extents


def _is_prime(n):
    return n > 1 and all(n % p for p in range(2, int(n ** 0.5) + 1))


def _range(sym, shape_env):
    """(lower, upper or None) of a size symbol, as Dynamo's guards bound it."""
    ranges = shape_env.var_to_range.get(sym)
    if ranges is None:
        return 2, None
    lower, upper = ranges.lower, ranges.upper  # sympy Integers, or infinities
    return (max(2, int(lower)) if isinstance(lower, sympy.Integer) else 2,
            int(upper) if isinstance(upper, sympy.Integer) else None)


def _sizes(meta):
    if isinstance(meta, torch.SymInt):
        return [(None, meta)]
    if isinstance(meta, torch.Tensor):
        return list(enumerate(meta.shape))
    return []


def _locators(placeholders):
    """{symbol: its shape environment} for every symbol in the inputs' sizes, and
    {symbol name: (placeholder index, dim)} for each that is some input's size alone."""
    symbols, located = {}, {}
    for i, node in enumerate(placeholders):
        for d, size in _sizes(node.meta.get("val")):
            if isinstance(size, torch.SymInt):
                expr = size.node.expr
                symbols.update({s: size.node.shape_env for s in expr.free_symbols})
                if isinstance(expr, sympy.Symbol):
                    located.setdefault(str(expr), (i, d))
    return symbols, located


def is_dynamic(module):
    return any(isinstance(size, torch.SymInt)
               for n in module.graph.nodes if n.op == "placeholder" for _, size in _sizes(n.meta.get("val")))


class Shaped:
    """A tensor argument by its description: propagate() makes a contiguous fake of it."""

    __slots__ = ("shape", "dtype", "device")

    def __init__(self, shape, dtype, device):
        self.shape, self.dtype, self.device = shape, dtype, device


def _at(size, sizes):
    return int(size.node.expr.subs(sizes)) if isinstance(size, torch.SymInt) else int(size)


def _sentinels(symbols, count=2):
    """For each of `count` lowerings, each symbol's sentinel: a prime inside the
    symbol's range (a mask sliced to the sequence length bounds it by the mask's), the
    largest there or from 1009 up where it is unbounded, distinct across symbols and
    lowerings; None where a range holds too few."""
    taken, chosen = set(), {}
    for sym, shape_env in symbols.items():
        low, high = _range(sym, shape_env)
        candidates = range(high, low - 1, -1) if high is not None else itertools.count(1009)
        found = list(itertools.islice((n for n in candidates if n not in taken and _is_prime(n)), count))
        if len(found) < count:
            return None
        taken.update(found)
        chosen[sym] = found
    return [{sym: found[i] for sym, found in chosen.items()} for i in range(count)]


def lower_symbolic(module, name, propagate, lower):
    """(Symbolic, None), or (None, why not): the partition written with its size symbols.
    `propagate(module, args)` gives every node's value for arguments; `lower(module,
    values, name)` the text, the declared parameter shapes and the outputs' orders."""
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    symbols, located = _locators(placeholders)
    missing = sorted(str(s) for s in symbols if str(s) not in located)
    if missing:
        return None, f"the size symbol {missing[0]} is no input's size on its own"
    symbols = dict(sorted(symbols.items(), key=lambda item: str(item[0])))
    sentinel_sets = _sentinels(symbols)
    if sentinel_sets is None:
        return None, "a size symbol's range is too narrow"
    forms = []
    for sizes in sentinel_sets:
        args = []
        for node in placeholders:
            meta = node.meta.get("val")
            if isinstance(meta, torch.Tensor):
                args.append(Shaped(tuple(_at(s, sizes) for s in meta.shape), meta.dtype, meta.device))
            else:
                args.append(_at(meta, sizes) if isinstance(meta, torch.SymInt) else meta)
        quiet = logging.getLogger("torch._subclasses.fake_tensor")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # it logs each failed op before raising
        try:
            values = propagate(module, args)
        except (RuntimeError, ValueError, IndexError) as e:  # a guard the sentinels break
            return None, f"the partition does not run with other sizes ({type(e).__name__}: {str(e)[:80]})"
        finally:
            quiet.setLevel(level)
        text, declared, orders = lower(module, values, name)
        by_value = {v: str(sym) for sym, v in sizes.items()}

        def named(shape):
            return None if shape is None else tuple(by_value.get(int(d), int(d)) for d in shape)

        outputs = [named(values[n].shape if order is None else [values[n].shape[a] for a in order])
                   for n, order in zip(_output_nodes(module), orders)]
        forms.append((_NUMBER.sub(lambda m: by_value.get(int(m.group()), m.group()), text),
                      [named(s) for s in declared], outputs, orders))
    if any(form != forms[0] for form in forms):
        return None, "a size reaches a value or a product of sizes"
    text, declared, outputs, orders = forms[0]
    locators = [(str(sym), *located[str(sym)]) for sym in symbols]
    return Symbolic(text, declared, outputs, locators, orders), None


def _output_nodes(module):
    out = module.graph.output_node().args[0]
    return list(out) if isinstance(out, (tuple, list)) else [out]
