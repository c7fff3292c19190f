#!/usr/bin/env python3
"""The GPU model's predictions for the row workloads (bench/rows/rows.py;
docs/gpu-benchmarks.md, Row workloads): every point under `stitch bench --backend
cuda-sim --profile TARGET`, one process per point, JOBS at a time, then a table per
dtype of the predicted fraction of copy (kind x N) against the targets of the GPU
roof issue: at least 0.9 of copy from 1,024 columns up.

    python3 bench/rows/predict.py PREFIX --stitch build/stitch [--target h200]
        [--planners stitch] [--kinds K,...] [--dtypes f32,bf16] [--ns N,...] [--jobs 2]
    python3 bench/rows/predict.py PREFIX --report     # the table again from PREFIX.json

writes PREFIX.json (every result row of stitch bench, per point) and PREFIX.md.
Nothing is timed: these are the model's numbers, not a GPU's.
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows  # noqa: E402

TARGET_FRACTION = 0.9
TARGET_FROM_N = 1024


def predict_one(stitch, path, target, planners):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "p.json")
        run = subprocess.run([stitch, "bench", path, "--backend", "cuda-sim", "--profile", target,
                              "--planners", planners, "--json", out], capture_output=True, text=True)
        if run.returncode != 0:
            return {"error": (run.stdout + run.stderr).strip().splitlines()[-1:]}
        with open(out) as f:
            doc = json.load(f)
    return {"results": doc["results"], "profile": doc["profile"], "unsupported": doc.get("unsupported", [])}


def report(doc):
    lines = [f"# Row workloads predicted on the {doc['target']} (the GPU model; nothing timed)", "",
             f"Made by `{doc['command']}` at commit {doc['commit']} on {doc['date']}. Each cell is the "
             "model's fraction of copy (`predicted_of_copy`: the model's time for a copy of the "
             "same footprint over its time for the workload) under the stitch planner, with its "
             "kernel count; the issue's target is at least "
             f"{TARGET_FRACTION} from {TARGET_FROM_N} columns up (cells below it marked *). Rows: "
             "256 MiB of x in its dtype (bench/rows/rows.py). The model under-predicted the H200's "
             "block-per-row rows by 0.2-0.3 of copy in its validation (docs/gpu-model.md), so a "
             "low cell is a lead to look at, not a measurement.", ""]
    points = doc["points"]
    misses, total = 0, 0
    for dtype in doc["dtypes"]:
        ns = doc["ns"]
        lines += [f"## {dtype}", "", "| kind | " + " | ".join(str(n) for n in ns) + " |",
                  "|---|" + "---:|" * len(ns)]
        for kind in doc["kinds"]:
            cells = []
            for n in ns:
                p = points.get(rows.name(kind, dtype, n), {})
                res = [r for r in p.get("results", []) if r["planner"] == "stitch"]
                if not res:
                    cells.append("error" if "error" in p else "")
                    continue
                r = res[0]
                f = r["predicted_of_copy"]
                miss = n >= TARGET_FROM_N and f < TARGET_FRACTION
                if n >= TARGET_FROM_N:
                    total += 1
                    misses += miss
                cells.append(f"{f:.2f}{'*' if miss else ''} ({r['kernels']})")
            lines.append(f"| {kind} | " + " | ".join(cells) + " |")
        lines.append("")
    lines.insert(4, f"Below target: {misses} of {total} points from {TARGET_FROM_N} columns up.\n")
    errors = {k: v["error"] for k, v in points.items() if "error" in v}
    if errors:
        lines += ["## Errors", ""] + [f"- {k}: {' '.join(v)}" for k, v in sorted(errors.items())] + [""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix")
    parser.add_argument("--stitch", default="build/stitch")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--planners", default="stitch")
    rows.add_selection(parser)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="only redraw PREFIX.md from PREFIX.json")
    args = parser.parse_args()
    if args.report:
        with open(args.prefix + ".json") as f:
            doc = json.load(f)
    else:
        kinds, dtypes, ns = rows.selection(args)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=HERE).stdout.strip()
        doc = {"target": args.target, "kinds": kinds, "dtypes": dtypes, "ns": ns, "commit": commit,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "command": "python3 bench/rows/predict.py " + " ".join(sys.argv[1:]), "points": {}}
        with tempfile.TemporaryDirectory() as work:
            files = {}
            for k in kinds:
                for d in dtypes:
                    for n in ns:
                        path = os.path.join(work, rows.name(k, d, n) + ".stitch")
                        with open(path, "w") as f:
                            f.write(rows.point_text(k, d, n))
                        files[rows.name(k, d, n)] = path
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                futures = {pool.submit(predict_one, args.stitch, p, args.target, args.planners): k
                           for k, p in files.items()}
                for fut in concurrent.futures.as_completed(futures):
                    doc["points"][futures[fut]] = fut.result()
                    print(f"predict.py: {len(doc['points'])}/{len(files)} {futures[fut]}", file=sys.stderr)
                    with open(args.prefix + ".json", "w") as f:  # after every point: a cut run keeps them
                        json.dump(doc, f, indent=1)
    with open(args.prefix + ".md", "w") as f:
        f.write(report(doc))
    print(report(doc))


if __name__ == "__main__":
    main()
