#!/usr/bin/env python3
"""The row workloads of a training step as Stitch graph files (docs/gpu-benchmarks.md,
Row workloads): softmax, log-softmax, cross-entropy (log-sum-exp less the target's
logit, one loss per row, integer targets), RMSNorm and LayerNorm forward, and the
backward of softmax, RMSNorm and LayerNorm, each at N columns for N in NS, in f32 and
bf16 (bf16 in and out, f32 inside: the graph casts). Rows M = 256 MiB / (N * the
dtype's size), so x alone is 256 MiB in either dtype.

    python3 bench/rows/rows.py OUTDIR [--kinds K,...] [--dtypes f32,bf16] [--ns N,...]
    python3 bench/rows/rows.py OUTDIR --small      # one file of every point's test graph

writes OUTDIR/row_{kind}_{dtype}_n{N}.stitch (the point), or with --small
OUTDIR/rows_small.stitch: each point at small_rows(N) rows (odd, fewer for long rows
so that the PTX interpreter checks each in seconds), and the norms' backward at 256
and 1,024 columns also at SPLIT_ROWS rows (their weight gradients then split in two
stages on a GPU), for `stitch check --backend cuda-sim`.

The backward graphs take what a training step saved (softmax: its output; the norms:
the per-row 1/rms, and LayerNorm's mean) and return the input's gradient and, for the
norms, the weight's (and LayerNorm's bias') gradient summed over the rows.
"""

import argparse
import os
import sys

KINDS = ("softmax", "log_softmax", "cross_entropy", "rmsnorm", "layernorm",
         "softmax_backward", "rmsnorm_backward", "layernorm_backward")
DTYPES = {"f32": 4, "bf16": 2}
NS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
X_BYTES = 256 << 20
# Rows of the `_split` test graphs (--small): a power of two times 64 or more.
SPLIT_ROWS = 512
RMS_EPS = 1e-6
LN_EPS = 1e-5


def rows(n, dtype):
    return X_BYTES // (n * DTYPES[dtype])


def small_rows(n):
    """Odd row counts; about 150k elements at most, so that the interpreter is quick."""
    return max(3, min(37, (150_000 // n) | 1))


def name(kind, dtype, n):
    return f"row_{kind}_{dtype}_n{n}"


def _to_f32(var, dtype):
    """(lines, name of the f32 value) for input `var`."""
    if dtype == "f32":
        return [], var
    return [f"  {var}f = cast({var}, to=f32)"], f"{var}f"


def _from_f32(var, out, dtype):
    """The cast of a result back to the graph's dtype (in f32 the result is written
    under its output's name: graph_text renames it)."""
    return [] if dtype == "f32" else [f"  {out} = cast({var}, to={dtype})"]


def _body(kind, dtype, m, n):
    """(parameters, results, lines) of one graph."""
    t = dtype
    lines = []

    def f32(var):
        more, v = _to_f32(var, dtype)
        lines.extend(more)
        return v

    if kind in ("softmax", "log_softmax"):
        x = f32("x")
        lines.append(f"  yf32 = {kind}({x}, axis=-1)")
        lines.extend(_from_f32("yf32", "y", dtype))
        return [f"x: {t}[{m}, {n}]"], [("y", f"{t}[{m}, {n}]")], lines
    if kind == "cross_entropy":
        # The target's logit through the flattened logits, as exporters and
        # decompositions write take_along_axis.
        x = f32("x")
        lines += [f"  lse = logsumexp({x}, axes=[1])",
                  f"  flat = reshape({x}, shape=[{m * n}])",
                  f"  row = iota(shape=[{m}], axis=0, dtype=i64)",
                  f"  start = mul(row, {n})",
                  "  index = add(start, target)",
                  "  picked = gather(flat, index, axis=0)",
                  "  loss = sub(lse, picked)"]
        return [f"x: {t}[{m}, {n}]", f"target: i64[{m}]"], [("loss", f"f32[{m}]")], lines
    if kind == "rmsnorm":
        x, g = f32("x"), f32("gamma")
        lines.append(f"  yf32 = rms_norm({x}, {g}, axes=[-1], eps={RMS_EPS})")
        lines.extend(_from_f32("yf32", "y", dtype))
        return [f"x: {t}[{m}, {n}]", f"gamma: {t}[{n}]"], [("y", f"{t}[{m}, {n}]")], lines
    if kind == "layernorm":
        x, g, b = f32("x"), f32("gamma"), f32("beta")
        lines.append(f"  yf32 = layer_norm({x}, {g}, {b}, axes=[-1], eps={LN_EPS})")
        lines.extend(_from_f32("yf32", "y", dtype))
        return ([f"x: {t}[{m}, {n}]", f"gamma: {t}[{n}]", f"beta: {t}[{n}]"], [("y", f"{t}[{m}, {n}]")],
                lines)
    if kind == "softmax_backward":
        y, dy = f32("y"), f32("dy")
        lines += [f"  p = mul({y}, {dy})",
                  "  s = reduce_sum(p, axes=[1], keepdims=true)",
                  f"  centred = sub({dy}, s)",
                  f"  dxf32 = mul({y}, centred)"]
        lines.extend(_from_f32("dxf32", "dx", dtype))
        return [f"y: {t}[{m}, {n}]", f"dy: {t}[{m}, {n}]"], [("dx", f"{t}[{m}, {n}]")], lines
    if kind in ("rmsnorm_backward", "layernorm_backward"):
        x, g, dy = f32("x"), f32("gamma"), f32("dy")
        lines.append(f"  r = reshape(rstd, shape=[{m}, 1])")
        if kind == "rmsnorm_backward":
            lines.append(f"  xhat = mul({x}, r)")
        else:
            lines += [f"  mu = reshape(mean, shape=[{m}, 1])",
                      f"  xc = sub({x}, mu)",
                      "  xhat = mul(xc, r)"]
        lines += [f"  gy = mul({dy}, {g})",
                  "  gx = mul(gy, xhat)",
                  "  proj = reduce_mean(gx, axes=[1], keepdims=true)",
                  "  along = mul(xhat, proj)"]
        if kind == "rmsnorm_backward":
            lines.append("  inner = sub(gy, along)")
        else:
            lines += ["  gmean = reduce_mean(gy, axes=[1], keepdims=true)",
                      "  less = sub(gy, gmean)",
                      "  inner = sub(less, along)"]
        lines += ["  dxf32 = mul(inner, r)",
                  f"  wx = mul({dy}, xhat)",
                  "  dgamma = reduce_sum(wx, axes=[0])"]
        lines.extend(_from_f32("dxf32", "dx", dtype))
        params = [f"x: {t}[{m}, {n}]", f"gamma: {t}[{n}]"]
        params += [f"mean: f32[{m}]"] if kind == "layernorm_backward" else []
        params += [f"rstd: f32[{m}]", f"dy: {t}[{m}, {n}]"]
        results = [("dx", f"{t}[{m}, {n}]"), ("dgamma", f"f32[{n}]")]
        if kind == "layernorm_backward":
            lines.append(f"  dbeta = reduce_sum({dy}, axes=[0])")
            results.append(("dbeta", f"f32[{n}]"))
        return params, results, lines
    raise ValueError(kind)


def graph_text(kind, dtype, n, m, graph_name):
    params, results, lines = _body(kind, dtype, m, n)
    if dtype == "f32":
        lines = [line.replace("yf32", "y").replace("dxf32", "dx") for line in lines]
    head = f"graph {graph_name}({', '.join(params)}) -> ({', '.join(r for _, r in results)}) {{"
    return "\n".join([head, *lines, f"  return {', '.join(v for v, _ in results)}", "}"]) + "\n"


def point_text(kind, dtype, n):
    m = rows(n, dtype)
    return (f"# Row workload: {kind} over rows of {n} columns, {m} rows, {dtype}"
            f"{' in and out, f32 inside' if dtype != 'f32' else ''}.\n"
            "# Generated by bench/rows/rows.py (docs/gpu-benchmarks.md, Row workloads); do not edit.\n\n"
            + graph_text(kind, dtype, n, m, name(kind, dtype, n)))


def listed(text, known, what):
    items = [s for s in text.split(",") if s] if text else list(known)
    for item in items:
        if item not in known:
            sys.exit(f"rows.py: unknown {what} {item!r} (known: {', '.join(map(str, known))})")
    return items


def add_selection(parser):
    """--kinds, --dtypes and --ns, each a comma-separated subset (all by default)."""
    parser.add_argument("--kinds", default="", help=f"of {','.join(KINDS)}")
    parser.add_argument("--dtypes", default="", help=f"of {','.join(DTYPES)}")
    parser.add_argument("--ns", default="", help=f"of {','.join(map(str, NS))}")


def selection(args):
    """(kinds, dtypes, ns) that add_selection's arguments name."""
    return (listed(args.kinds, KINDS, "kind"), listed(args.dtypes, DTYPES, "dtype"),
            [int(n) for n in listed(args.ns, [str(n) for n in NS], "N")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    add_selection(parser)
    parser.add_argument("--small", action="store_true", help="one file of every point's small test graph")
    args = parser.parse_args()
    kinds, dtypes, ns = selection(args)
    os.makedirs(args.outdir, exist_ok=True)
    points = [(k, d, n) for k in kinds for d in dtypes for n in ns]
    if args.small:
        texts = [graph_text(k, d, n, small_rows(n), name(k, d, n) + "_small") for k, d, n in points]
        # The norms' weight gradients at SPLIT_ROWS rows: enough for a GPU to split
        # their column reductions in two stages (src/ir/split_reductions.h).
        texts += [graph_text(k, d, n, SPLIT_ROWS, name(k, d, n) + "_split") for k, d, n in points
                  if k.endswith("norm_backward") and n in (256, 1024)]
        with open(os.path.join(args.outdir, "rows_small.stitch"), "w") as f:
            f.write("# Every row workload's test graph. Generated by bench/rows/rows.py; do not edit.\n\n")
            f.write("\n".join(texts))
        return
    for k, d, n in points:
        with open(os.path.join(args.outdir, name(k, d, n) + ".stitch"), "w") as f:
            f.write(point_text(k, d, n))


if __name__ == "__main__":
    main()
