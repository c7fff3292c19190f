#!/usr/bin/env python3
"""The DP + beam plan (`stitch`) against the greedy plan (`greedy`), measured
(docs/fusion.md, The FusionStitching planners; issue target: the DP plan's
time at most the greedy plan's on every workload, geometric mean reported).

For each graph both planners' plans are printed and compared: where they are the
same plan (the same groups, kinds, roots, nodes and order; the reasons given for
unfused edges may differ), they are the same kernels
and no timing can tell them apart, so the ratio is 1 by construction and the graph
is listed as such. Where they differ, `stitch bench --planners greedy,stitch` runs
--rounds times, the order of the two alternating between rounds so that a drift
of the machine falls on both; a planner's time is the median over rounds of
`stitch bench`'s median (outputs reused). greedy / stitch above 1: the DP plan is
faster.

    python3 bench/planning/dp_vs_greedy.py build/stitch FILES... -o bench/results/dp-vs-greedy-DATE
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile


def plan_text(stitch, path, planner):
    out = subprocess.run([stitch, "plan", path, "--planner", planner], check=True, capture_output=True,
                         text=True).stdout
    # The kernels: each group's kind, roots and nodes, in order. The refusal
    # lines name the planner's own reasons and do not change what runs.
    return "\n".join(l for l in out.splitlines() if l.startswith("group "))


def bench(stitch, path, planners, repeat, warmup):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([stitch, "bench", path, "--planners", ",".join(planners), "--repeat", str(repeat),
                        "--warmup", str(warmup), "--json", out], check=True, capture_output=True, text=True)
        with open(out) as f:
            return {r["planner"]: r for r in json.load(f)["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stitch")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("-o", "--output", help="write OUTPUT.json and OUTPUT.md")
    args = ap.parse_args()
    rows = []
    for path in args.files:
        name = os.path.splitext(os.path.basename(path))[0]
        same = plan_text(args.stitch, path, "greedy") == plan_text(args.stitch, path, "stitch")
        row = {"graph": name, "same_plan": same}
        if not same:
            times = {"greedy": [], "stitch": []}
            kernels = {}
            for r in range(args.rounds):
                order = ["greedy", "stitch"] if r % 2 == 0 else ["stitch", "greedy"]
                got = bench(args.stitch, path, order, args.repeat, args.warmup)
                for p in order:
                    times[p].append(got[p]["median_s"])
                    kernels[p] = got[p]["kernels"]
            row.update({p: {"seconds": statistics.median(times[p]), "rounds": times[p], "kernels": kernels[p]}
                        for p in times})
            row["greedy_over_stitch"] = row["greedy"]["seconds"] / row["stitch"]["seconds"]
        rows.append(row)
        print(name, "same plan" if same else f"greedy/stitch {row['greedy_over_stitch']:.3f}", file=sys.stderr)
    differing = [r["greedy_over_stitch"] for r in rows if not r["same_plan"]]
    all_ratios = [1.0 if r["same_plan"] else r["greedy_over_stitch"] for r in rows]
    geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
    doc = {"machine": platform.machine(), "cpus": os.cpu_count(), "rounds": args.rounds, "repeat": args.repeat,
           "rows": rows, "geomean_all": geo(all_ratios), "geomean_differing": geo(differing)}
    md = ["| graph | plans | kernels greedy | kernels stitch | seconds greedy | seconds stitch | greedy / stitch |",
          "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if r["same_plan"]:
            md.append(f"| {r['graph']} | the same | | | | | 1 (same kernels) |")
        else:
            md.append(f"| {r['graph']} | differ | {r['greedy']['kernels']} | {r['stitch']['kernels']} | "
                      f"{r['greedy']['seconds']:.4g} | {r['stitch']['seconds']:.4g} | {r['greedy_over_stitch']:.3f} |")
    md.append("")
    md.append(f"Geometric mean of greedy / stitch: {doc['geomean_all']:.3f} over all {len(rows)} graphs, "
              f"{doc['geomean_differing']:.3f} over the {len(differing)} whose plans differ.")
    print("\n".join(md))
    if args.output:
        with open(args.output + ".json", "w") as f:
            json.dump(doc, f, indent=1)
        with open(args.output + ".md", "w") as f:
            f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
