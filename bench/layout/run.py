#!/usr/bin/env python3
"""Layout ops against the plain chain (docs/benchmarks.md, Layout ops).

Times every graph of layout_chain.stitch with `stitch bench` (planner stitch, CPU,
outputs reused) in ROUNDS rounds, the graphs in a rotated order each round so that
none always runs first, and writes a Markdown table: each graph's median over the
rounds' medians and its ratio to `plain` (the chain without a layout op) from the
same rounds. With --baseline, a second binary (an earlier build) is timed in the
same rounds, each graph right after the first binary's run of it.

    bench/layout/run.py STITCH_BINARY [--baseline OTHER] [-o OUT.md] [--rounds N] [--repeat N]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "layout_chain.stitch")


def graph_names():
    names = []
    with open(SOURCE) as f:
        for line in f:
            if line.startswith("graph "):
                names.append(line.split()[1].split("(")[0])
    return names


def time_graph(stitch, graph, repeat):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([stitch, "bench", SOURCE, "--graph", graph, "--planners", "stitch", "--repeat", str(repeat),
                        "--json", out.name], check=True, stdout=subprocess.DEVNULL)
        with open(out.name) as f:
            data = json.load(f)
    (result,) = data["results"]
    return result["median_s"], data["machine"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stitch")
    p.add_argument("-o", "--output")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--baseline", help="an earlier stitch binary, timed in the same rounds")
    args = p.parse_args()
    names = graph_names()
    times = {n: [] for n in names}
    before = {n: [] for n in names}
    machine = {}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            t, machine = time_graph(args.stitch, n, args.repeat)
            times[n].append(t)
            if args.baseline:
                before[n].append(time_graph(args.baseline, n, args.repeat)[0])
    plain = statistics.median(times["plain"])
    lines = [
        "# Layout ops in front of and behind an elementwise chain, CPU",
        "",
        f"`bench/layout/run.py` ({args.rounds} rounds, `stitch bench --repeat {args.repeat}` each, planner stitch, "
        "outputs reused); machine: "
        f"{machine.get('cpu', platform.processor())}, {machine.get('cores', os.cpu_count())} cores, "
        f"{machine.get('compiler', '')}; {machine.get('date', '')}.",
        "",
    ]
    if args.baseline:
        lines += [f"Baseline: `{args.baseline}`, timed in the same rounds.", "",
                  "| graph | median ms | plain / graph | baseline ms | baseline / this |", "|---|---:|---:|---:|---:|"]
    else:
        lines += ["| graph | median ms | plain / graph |", "|---|---:|---:|"]
    for n in names:
        m = statistics.median(times[n])
        row = f"| {n} | {m * 1e3:.3f} | {plain / m:.2f} |"
        if args.baseline:
            b = statistics.median(before[n])
            row += f" {b * 1e3:.3f} | {b / m:.1f} |"
        lines.append(row)
    text = "\n".join(lines) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
