"""CI's check of the GPU model's analytical form against its simulated counters
(docs/gpu-model.md, The analytical form): the row-reduction graphs (six
workloads and the Triton sweeps) are simulated on cuda-sim and predicted with
`--profile` under each forced row schedule that applies to them (block-per-row,
warp-per-row; their rows are all longer than a warp) and under the default choice, which
the analytical form makes at compile time; the default must be predicted within
TOLERANCE of the best forced schedule on every graph but at most --allow.

    python3 bench/gpu_model/check_analytic.py --stitch build/stitch
        [--target h200] [--allow N] [--json OUT]

Prints one line per graph (each schedule's simulated time and the default's
ratio to the best). Exit status: 0 when at most --allow graphs miss, 1 when
more do, 2 on bad usage or a failed run.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# Multi-row-per-warp applies to rows shorter than a warp, which none of these graphs
# has (forced on longer rows it is warp-per-row), so it is not simulated again.
SCHEDULES = ["block-per-row", "warp-per-row"]
ROW_WORKLOADS = ["layernorm", "log_softmax", "residual_layernorm", "rmsnorm", "softmax", "softmax_explicit"]
TOLERANCE = 0.05


def simulate(stitch, files, target, scratch, schedule):
    out = os.path.join(scratch, f"{schedule}.json")
    command = [stitch, "bench", *files, "--backend", "cuda-sim", "--profile", target, "--planners", "stitch",
               "--json", out]
    if schedule != "default":
        command += ["--row-schedule", schedule]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit(2)
    with open(out) as f:
        return {r["workload"]: r["predicted_s"] for r in json.load(f)["results"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stitch", required=True)
    parser.add_argument("--target", default="h200")
    parser.add_argument("--allow", type=int, default=0, help="graphs that may miss the tolerance")
    parser.add_argument("--json", help="write every graph's times here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        sweeps = os.path.join(scratch, "sweeps")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "peers", "sweeps.py"), sweeps], check=True,
                       capture_output=True)
        files = [os.path.join(ROOT, "bench", "workloads", f"{w}.stitch") for w in ROW_WORKLOADS]
        files += sorted(glob.glob(os.path.join(sweeps, "*.stitch")))
        times = {s: simulate(args.stitch, files, args.target, scratch, s) for s in ["default", *SCHEDULES]}
    rows, misses = [], []
    for workload in sorted(times["default"]):
        forced = {s: times[s].get(workload) for s in SCHEDULES}
        best = min(t for t in [times["default"][workload], *forced.values()] if t is not None)
        ratio = times["default"][workload] / best
        rows.append({"workload": workload, "default_s": times["default"][workload], "forced_s": forced,
                     "default_of_best": ratio})
        miss = ratio > 1 + TOLERANCE
        if miss:
            misses.append(workload)
        cells = " ".join(f"{s} {forced[s] * 1e6:8.1f}" for s in SCHEDULES if forced[s] is not None)
        print(f"{workload:<28} default {times['default'][workload] * 1e6:8.1f} us  {cells}  "
              f"default/best {ratio:.3f}{'  MISS' if miss else ''}")
    print(f"{len(rows) - len(misses)} of {len(rows)} graphs: the default (the analytical form's choice) within "
          f"{TOLERANCE:.0%} of the best schedule the simulated model predicts; allowed misses {args.allow}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "tolerance": TOLERANCE, "graphs": rows}, f, indent=1)
            f.write("\n")
    return 1 if len(misses) > args.allow else 0


if __name__ == "__main__":
    sys.exit(main())
