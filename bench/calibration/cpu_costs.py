#!/usr/bin/env python3
"""Measures the CPU target model's launch time and expensive-op costs through
Stitch itself (docs/fusion.md, Delta evaluator).

Launch: a chain of 64 tiny ops planned by `none` (64 kernels, 16 floats each)
against a chain of 1, per extra kernel: what one kernel call costs the
executable (the call and an OpenMP parallel region) beyond its memory traffic.

Expensive ops: per op, one kernel (`xla` fuses the chain) applying the op 8
times, each time to a cheap wrapper of the previous value that keeps it in the
op's domain, over 4 Mi floats; less the same chain of wrappers without the op,
per element and application: the op's compute with every core busy.

Prints one "launch_seconds X" line and one "op SECONDS" line per op; each value
is the median over --rounds alternating rounds of `stitch bench` medians.

    python3 bench/calibration/cpu_costs.py build/stitch
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ELEMENTS = 4 * 1024 * 1024
APPLICATIONS = 8
LAUNCH_CHAIN = 64

# op -> (the op applied to {p}, the wrapper alone): the wrapper keeps the
# argument where the op is finite and not saturated.
OPS = {
    "exp": ("exp(neg(abs({p})))", "neg(abs({p}))"),
    "exp2": ("exp2(neg(abs({p})))", "neg(abs({p}))"),
    "expm1": ("expm1(neg(abs({p})))", "neg(abs({p}))"),
    "log": ("log(add(abs({p}), 1.0))", "add(abs({p}), 1.0)"),
    "log2": ("log2(add(abs({p}), 1.0))", "add(abs({p}), 1.0)"),
    "log1p": ("log1p(abs({p}))", "abs({p})"),
    "sqrt": ("sqrt(abs({p}))", "abs({p})"),
    "rsqrt": ("rsqrt(add(abs({p}), 1.0))", "add(abs({p}), 1.0)"),
    "reciprocal": ("reciprocal(add(abs({p}), 1.0))", "add(abs({p}), 1.0)"),
    "div": ("div(1.0, add(abs({p}), 1.0))", "add(abs({p}), 1.0)"),
    "sin": ("sin({p})", "neg({p})"),
    "cos": ("cos({p})", "neg({p})"),
    "tan": ("tan(mul({p}, 0.5))", "mul({p}, 0.5)"),
    "tanh": ("tanh({p})", "neg({p})"),
    "sigmoid": ("sigmoid({p})", "neg({p})"),
    "erf": ("erf({p})", "neg({p})"),
    "pow": ("pow(add(abs({p}), 1.0), 0.7)", "add(abs({p}), 1.0)"),
    "rem": ("rem({p}, 3.0)", "neg({p})"),
    "atan2": ("atan2({p}, 2.0)", "neg({p})"),
}


def chain_graph(name, expr, times, elements):
    lines = [f"graph {name}(x: f32[{elements}]) -> (f32[{elements}]) {{"]
    prev = "x"
    for i in range(times):
        lines.append(f"  v{i} = " + expr.format(p=prev))
        prev = f"v{i}"
    lines.append(f"  return {prev}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def median_seconds(stitch, path, planner, repeat, warmup, workdir):
    out = os.path.join(workdir, "bench.json")
    subprocess.run([stitch, "bench", path, "--planners", planner, "--repeat", str(repeat), "--warmup", str(warmup),
                    "--json", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)["results"][0]["median_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stitch", help="the stitch binary")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        def write(name, text):
            path = os.path.join(workdir, name + ".stitch")
            with open(path, "w") as f:
                f.write(text)
            return path

        one = write("launch1", chain_graph("launch1", "neg({p})", 1, 16))
        many = write("launch64", chain_graph("launch64", "neg({p})", LAUNCH_CHAIN, 16))
        launches = []
        for _ in range(args.rounds):
            t1 = median_seconds(args.stitch, one, "none", 300, 30, workdir)
            tn = median_seconds(args.stitch, many, "none", 300, 30, workdir)
            launches.append((tn - t1) / (LAUNCH_CHAIN - 1))
        print(f"launch_seconds {statistics.median(launches):.3g}")
        sys.stdout.flush()
        for op, (with_op, wrapper) in OPS.items():
            timed = write(op, chain_graph(op, with_op, APPLICATIONS, ELEMENTS))
            base = write(op + "_base", chain_graph(op + "_base", wrapper, APPLICATIONS, ELEMENTS))
            costs = []
            for _ in range(args.rounds):
                t_op = median_seconds(args.stitch, timed, "xla", 15, 3, workdir)
                t_base = median_seconds(args.stitch, base, "xla", 15, 3, workdir)
                costs.append(max(t_op - t_base, 0.0) / (APPLICATIONS * ELEMENTS))
            print(f"{op} {statistics.median(costs):.3g}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
