#!/usr/bin/env python3
"""DP + beam objective against the ILP's, per graph (docs/fusion.md, The
FusionStitching planners): `stitch plan --format json` under `stitch` and
`ilp` for every graph of the given .stitch files, the search objectives
(seconds saved by the delta evaluator's estimate), their ratio, whether CBC
proved the ILP optimal, and the kernel counts. Writes OUTPUT.json and prints
a Markdown table.

    python3 bench/planning/search_quality.py build/stitch -o out/search \\
        bench/workloads/*.stitch tests/ir/corpus/*.stitch out/models/*.stitch
"""
import argparse
import json
import os
import re
import subprocess


def graphs_in(path):
    with open(path) as f:
        return re.findall(r"^graph ([A-Za-z0-9_]+)", f.read(), flags=re.M)


def plan(stitch, path, graph, planner):
    out = subprocess.run([stitch, "plan", path, "--graph", graph, "--planner", planner, "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    search = doc.get("search", {})
    return {"objective": search.get("objective_seconds", 0.0), "kernels": doc["kernels"],
            "optimal": search.get("optimal", True)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stitch")
    parser.add_argument("files", nargs="+")
    parser.add_argument("-o", "--output", required=True, help="output path without extension (.json)")
    args = parser.parse_args()
    rows = []
    for path in args.files:
        for graph in graphs_in(path):
            dp = plan(args.stitch, path, graph, "stitch")
            ilp = plan(args.stitch, path, graph, "ilp")
            ratio = dp["objective"] / ilp["objective"] if ilp["objective"] > 0 else 1.0
            rows.append({"file": os.path.basename(path), "graph": graph, "dp_objective_s": dp["objective"],
                         "ilp_objective_s": ilp["objective"], "ratio": ratio, "ilp_optimal": ilp["optimal"],
                         "dp_kernels": dp["kernels"], "ilp_kernels": ilp["kernels"]})
    with open(args.output + ".json", "w") as f:
        json.dump(rows, f, indent=1)
    print("| graph | DP objective (us) | ILP objective (us) | DP / ILP | ILP optimal | kernels DP / ILP |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        if r["ilp_objective_s"] <= 0 and r["dp_objective_s"] <= 0:
            continue
        print(f"| {r['graph']} | {r['dp_objective_s'] * 1e6:.4g} | {r['ilp_objective_s'] * 1e6:.4g} | "
              f"{r['ratio']:.4f} | {'yes' if r['ilp_optimal'] else 'no'} | {r['dp_kernels']} / {r['ilp_kernels']} |")
    searched = [r for r in rows if r["ilp_objective_s"] > 0]
    worst = min((r["ratio"] for r in searched), default=1.0)
    print(f"\n{len(rows)} graphs, {len(searched)} with a positive ILP objective; "
          f"worst DP / ILP {worst:.4f}; every ILP optimal: {all(r['ilp_optimal'] for r in rows)}")


if __name__ == "__main__":
    main()
