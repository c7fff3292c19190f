#!/usr/bin/env python3
"""Times `stitch plan` per planner on graphs of growing size and on the model
graphs (docs/fusion.md, Planning time), and writes the figures as JSON and an
SVG plot of seconds against nodes.

    python3 bench/planning/time_planners.py STITCH_BINARY -o bench/results/planning-DATE

Graphs, at doubling sizes, a planner stopped once one size takes longer than
--limit seconds: the residual chain of residual_chain.py (25 primitive nodes a
block; with no dot between blocks, xla's rules recompute the residual sum in
every later kernel up to the operand limit, so its kernels are large), and
BERT encoders of bench/models/bert.py (--seq 64 --batch 2, 70 nodes a layer);
then the four model graphs of bench/models at their default sizes. A planner's time is the wall time of one `stitch plan` process
(parse, canonicalize, plan, print), the best of --repeat runs. The kernel
count and the search's objective line are recorded with it.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PLANNERS = ["none", "xla", "greedy", "stitch", "ilp"]
MODELS = [
    ("bert", ["bench/models/bert.py"]),
    ("gpt2x12", ["bench/models/gpt2_block.py", "--blocks", "12"]),
    ("t5x12", ["bench/models/t5_block.py", "--blocks", "12"]),
    ("dien", ["bench/models/dien.py"]),
]


def generate(args, path):
    with open(path, "w") as f:
        subprocess.run([sys.executable] + args, cwd=ROOT, stdout=f, check=True)


def time_plan(stitch, path, planner, repeat, limit):
    best = None
    out = ""
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            r = subprocess.run([stitch, "plan", path, "--planner", planner], capture_output=True, text=True,
                               timeout=limit * 4)
        except subprocess.TimeoutExpired:
            return {"seconds": None, "timed_out": True}
        seconds = time.perf_counter() - start
        if r.returncode != 0:
            return {"seconds": None, "error": r.stderr.strip()[-500:]}
        out = r.stdout
        best = seconds if best is None else min(best, seconds)
    # Launches: the groups less the dot epilogues (plan_text's "bytes total" line).
    kernels = int(re.search(r"^bytes total: .*, (\d+) kernels$", out, re.M).group(1))
    search = [l for l in out.splitlines() if l.startswith("search:")]
    return {"seconds": best, "kernels": kernels, "search": search[0] if search else None}


def count_nodes(stitch, path):
    r = subprocess.run([stitch, "plan", path, "--planner", "none"], capture_output=True, text=True, check=True)
    return int(re.search(r": (\d+) groups?", r.stdout.splitlines()[0]).group(1))


FAMILIES = [
    # (name, generator command for a size, first size, last size)
    ("chain", lambda n: [os.path.join(HERE, "residual_chain.py"), str(n)], 16, 4096),
    ("bert", lambda n: ["bench/models/bert.py", "--layers", str(n), "--seq", "64", "--batch", "2"], 6, 1536),
]


def svg(doc):
    width, height, left, bottom, top, right = 680, 420, 70, 50, 20, 160
    series = {(f, p): [(r["nodes"], r[p]["seconds"]) for r in doc[f] if r.get(p, {}).get("seconds")]
              for f, _, _, _ in FAMILIES for p in PLANNERS}
    xs = [x for pts in series.values() for x, _ in pts]
    ys = [y for pts in series.values() for _, y in pts]
    if not xs:
        return ""
    import math
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0, y1 = math.log10(min(ys)), math.log10(max(ys))
    x1 = max(x1, x0 + 1)
    y1 = max(y1, y0 + 1)

    def sx(x):
        return left + (math.log10(x) - x0) / (x1 - x0) * (width - left - right)

    def sy(y):
        return height - bottom - (math.log10(y) - y0) / (y1 - y0) * (height - top - bottom)

    colours = {"none": "#999999", "xla": "#1f77b4", "greedy": "#ff7f0e", "stitch": "#2ca02c", "ilp": "#d62728"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="14">stitch plan: seconds vs primitive nodes, log-log (solid: residual chain, dashed: BERT layers)</text>',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>']
    for e in range(int(math.floor(x0)), int(math.ceil(x1)) + 1):
        if x0 <= e <= x1:
            out.append(f'<text x="{sx(10 ** e):.0f}" y="{height - bottom + 15}" text-anchor="middle">1e{e}</text>')
    for e in range(int(math.floor(y0)), int(math.ceil(y1)) + 1):
        if y0 <= e <= y1:
            out.append(f'<text x="{left - 5}" y="{sy(10 ** e):.0f}" text-anchor="end">1e{e} s</text>')
    for (f, p), pts in series.items():
        if not pts:
            continue
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="6,4"' if f == "bert" else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{colours[p]}" stroke-width="2"{dash}/>')
    for i, p in enumerate(PLANNERS):
        out.append(f'<text x="{width - right + 10}" y="{top + 20 + 15 * i}" fill="{colours[p]}">{p}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stitch", help="the stitch binary")
    parser.add_argument("-o", "--output", required=True, help="output path without extension (.json and .svg)")
    parser.add_argument("--max-size", type=int, default=4096, help="cap on the block or layer count")
    parser.add_argument("--limit", type=float, default=30.0, help="stop a planner after a size that took longer")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    stitch = os.path.abspath(args.stitch)
    doc = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d"), "chain": [], "bert": [], "models": []}
    with tempfile.TemporaryDirectory() as tmp:
        for family, make, start, last in FAMILIES:
            stopped = set()
            size = start
            while size <= min(last, args.max_size) and len(stopped) < len(PLANNERS):
                path = os.path.join(tmp, f"{family}{size}.stitch")
                generate(make(size), path)
                row = {"size": size, "nodes": count_nodes(stitch, path)}
                for p in PLANNERS:
                    if p in stopped:
                        continue
                    row[p] = time_plan(stitch, path, p, args.repeat, args.limit)
                    if row[p].get("seconds") is None or row[p]["seconds"] > args.limit:
                        stopped.add(p)
                    print(f"{family} {size:5d} {row['nodes']:7d} nodes {p:7s} {row[p]}", flush=True)
                doc[family].append(row)
                size *= 2
        for name, gen in MODELS:
            path = os.path.join(tmp, f"{name}.stitch")
            generate(gen, path)
            row = {"model": name, "nodes": count_nodes(stitch, path)}
            for p in PLANNERS:
                row[p] = time_plan(stitch, path, p, args.repeat, args.limit)
                print(f"model {name:8s} {row['nodes']:7d} nodes {p:7s} {row[p]}", flush=True)
            doc["models"].append(row)
    with open(args.output + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(args.output + ".svg", "w") as f:
        f.write(svg(doc))


if __name__ == "__main__":
    main()
