"""Profiles the kernels an old commit generated, for the GPU model's fit and
validation (docs/gpu-model.md, Fitting): runs that commit's `stitch bench
--backend cuda` on this tree's simulated driver, which profiles every launch
(STITCH_CUDA_SIM_PROFILE), for each (workload, planner) a GPU run measured.

The old commit needs bench/gpu_model/old-commit-ptx.patch: its runtime then
loads the driver named by STITCH_OLD_COMMIT_DRIVER and hands it PTX text
(STITCH_OLD_COMMIT_PTX) instead of cubins.

    python3 bench/gpu_model/profile_commit.py --stitch OLD/build/stitch \\
        --driver build/libstitch_cuda_sim.so --measured M.json --search bench/workloads \\
        --search SWEEPS_DIR [--label-option=--row-schedule] --out PROFILES.json

The old bench runs each planner twice (its checked run, then one timed run);
the first run's launches are kept, and the two are checked to launch the same
kernels. Writes {label: {"results": [{workload, planner, kernels, bytes_min,
launches: [profile, ...]}]}}, labels as in M.json ("" for a plain document).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile


def documents(path):
    with open(path) as f:
        doc = json.load(f)
    return {"": doc} if "results" in doc else doc


def find(workload, search):
    for d in search:
        path = os.path.join(d, workload + ".stitch")
        if os.path.exists(path):
            return path
    raise SystemExit(f"profile_commit: no {workload}.stitch in {', '.join(search)}")


def profile_file(args, path, planners, label, scratch):
    out_jsonl = os.path.join(scratch, "launches.jsonl")
    out_json = os.path.join(scratch, "bench.json")
    for f in (out_jsonl, out_json):
        if os.path.exists(f):
            os.remove(f)
    env = dict(os.environ, STITCH_OLD_COMMIT_DRIVER=args.driver, STITCH_OLD_COMMIT_PTX="1",
               STITCH_CUDA_SIM_PROFILE=args.target, STITCH_CUDA_SIM_PROFILE_OUT=out_jsonl)
    command = [args.stitch, "bench", path, "--backend", "cuda", "--planners", ",".join(planners),
               "--repeat", "1", "--warmup", "0", "--json", out_json]
    if label and args.label_option:
        command += [args.label_option, label]
    # The old bench finds mismatches (a profiled run interprets a sample of the CTAs): status 1 is expected.
    run = subprocess.run(command, env=env, capture_output=True, text=True)
    if run.returncode not in (0, 1) or not os.path.exists(out_json):
        sys.stderr.write(run.stdout[-2000:] + run.stderr[-2000:])
        raise SystemExit(f"profile_commit: {' '.join(command)} failed with status {run.returncode}")
    with open(out_json) as f:
        rows = json.load(f)["results"]
    with open(out_jsonl) as f:
        launches = [json.loads(line) for line in f]
    results, at = [], 0
    for row in rows:
        k = row["kernels"]
        first, second = launches[at:at + k], launches[at + k:at + 2 * k]
        if [p["kernel"] for p in first] != [p["kernel"] for p in second]:
            raise SystemExit(f"profile_commit: {row['workload']} {row['planner']}: the two runs launched different kernels")
        at += 2 * k
        results.append({"workload": row["workload"], "planner": row["planner"], "kernels": k,
                        "bytes_min": row["bytes_min"], "launches": first})
    if at != len(launches):
        raise SystemExit(f"profile_commit: {path}: {len(launches)} launches for {at} expected")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stitch", required=True, help="the old commit's stitch, patched")
    parser.add_argument("--driver", required=True, help="this tree's libstitch_cuda_sim.so")
    parser.add_argument("--measured", required=True)
    parser.add_argument("--search", action="append", required=True, help="directories with WORKLOAD.stitch")
    parser.add_argument("--label-option", default="", help="the bench option each label is the value of")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, doc in documents(args.measured).items():
            by_workload = {}
            for r in doc["results"]:
                by_workload.setdefault(r["workload"], [])
                if r["planner"] not in by_workload[r["workload"]]:
                    by_workload[r["workload"]].append(r["planner"])
            results = []
            for workload, planners in by_workload.items():
                results += profile_file(args, find(workload, args.search), planners, label, scratch)
                print(f"{label or '-'} {workload}: {len(planners)} planner(s)", flush=True)
            out[label] = {"target": args.target, "results": results}
    with open(args.out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
