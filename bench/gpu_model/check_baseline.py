"""CI's performance check without a GPU (docs/gpu-model.md, In CI): predicts the
corpus on the H200 with the GPU model (`stitch bench --backend cuda-sim --profile
h200 --planners stitch`) and fails when a workload's predicted fraction of copy
drops by more than 10% against the committed baseline. A change that makes a
kernel slower on the model shows here, on every commit, before any GPU run.

    python3 bench/gpu_model/check_baseline.py --stitch build/stitch \\
        --baseline bench/gpu_model/baseline-h200.json [--write]

--write replaces the baseline with this run's predictions (after a change that
is meant to move them, or new fitted constants), and says what moved.
Exit status: 0 when no workload dropped, 1 when one did, 2 on bad usage.
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
DROP = 0.10


def predict(stitch, target):
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "predicted.json")
        files = sorted(glob.glob(os.path.join(ROOT, "bench", "workloads", "*.stitch")))
        run = subprocess.run([stitch, "bench", *files, "--backend", "cuda-sim", "--profile", target,
                              "--planners", "stitch", "--json", out], capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stdout + run.stderr)
            raise SystemExit(f"check_baseline: stitch bench failed with status {run.returncode}")
        with open(out) as f:
            doc = json.load(f)
    return {r["workload"]: r["predicted_of_copy"] for r in doc["results"]}, doc["profile"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stitch", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--target", default="h200")
    parser.add_argument("--write", action="store_true", help="write this run's predictions as the baseline")
    args = parser.parse_args()
    now, profile = predict(args.stitch, args.target)
    old = {}
    if os.path.exists(args.baseline):
        with open(args.baseline) as f:
            old = json.load(f)["predicted_of_copy"]
    dropped = []
    for workload, value in sorted(now.items()):
        before = old.get(workload)
        change = "" if before is None else f" (baseline {before:.3f}, {value / before - 1:+.1%})"
        print(f"{workload:<24} {value:.3f}{change}")
        if before is not None and value < (1 - DROP) * before:
            dropped.append(workload)
    missing = sorted(set(old) - set(now))
    if args.write:
        with open(args.baseline, "w") as f:
            json.dump({"target": args.target, "planner": "stitch", "constants": profile.get("constants"),
                       "predicted_of_copy": now}, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {args.baseline}")
        return 0
    if missing:
        print(f"check_baseline: not predicted any more: {', '.join(missing)}")
    if dropped:
        print(f"check_baseline: predicted fraction of copy dropped by more than {DROP:.0%}: {', '.join(dropped)}; "
              "if that is meant, rerun with --write and commit the baseline")
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
