"""Checks what bench/onnx/export.py wrote: each export imports, runs right under every
planner (`stitch check`: every planner against the reference interpreter) and matches
eager PyTorch's outputs (`stitch run` on the CPU, default planner).

    python bench/onnx/check.py EXPORT_DIR --stitch PATH/TO/stitch [--refused FILE] [--json OUT]
                               [--planners P,...] [--every-planner-once]

--refused names the exports expected to be refused, one per line:
`NAME: part of the message` (# comments). An export that fails to import is a failure
unless listed, with a message holding that part; a listed export that imports is a
failure too, so the list says what is refused today and nothing else. Exports the
exporter itself could not write (recorded in manifest.json) are reported and not run.
A dynamic-batch export is checked with `--dim batch=B`, B the batch its inputs have.
With --every-planner-once, `stitch check` runs on each model's first export only, and
the others are run on the interpreter and on the CPU (default planner) against PyTorch:
the kernels of five planners are most of the check's time.

Tolerance against PyTorch (f32): |stitch - torch| <= RTOL |torch| + ATOL per element,
the bound tests/bert uses for one layer, with ATOL raised for the deeper models
(docs/onnx.md, The model set).
Exit status: 0 when every export is as expected, 1 otherwise.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RTOL = 1e-4
ATOL = 1e-4


def read_refused(path):
    refused = {}
    if not path:
        return refused
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, part = line.partition(":")
                refused[name.strip()] = part.strip()
    return refused


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, (p.stdout + p.stderr).strip()


def check_one(entry, folder, stitch, every_planner, planners):
    """(status, detail): status ok, refused (stitch's exit 2) or failed. Without
    every_planner, the interpreter's outputs stand in for stitch check's."""
    model = os.path.join(folder, entry["file"])
    data = os.path.join(folder, entry["name"])
    inputs = [f"{n}={os.path.join(data, 'inputs', n + '.npy')}" for n in entry["inputs"]]
    dims = []
    if entry["batch"] == "dynamic":
        batch = np.load(os.path.join(data, "inputs", entry["inputs"][0] + ".npy"), mmap_mode="r").shape[0]
        dims = ["--dim", f"batch={batch}"]
    if every_planner:
        code, out = run([stitch, "check", model, *dims, *(["--planners", planners] if planners else [])])
        if code == 2:
            return "refused", out.splitlines()[-1] if out else "exit 2"
        if code != 0:
            return "failed", "stitch check: " + "\n".join(out.splitlines()[-8:])
    worst = 0.0
    for backend in ([] if every_planner else ["interp"]) + ["cpu"]:
        with tempfile.TemporaryDirectory() as got_dir:
            args = [a for i in inputs for a in ("--input", i)]
            code, out = run([stitch, "run", model, "--backend", backend, *args, "--output-dir", got_dir])
            if code == 2:
                return "refused", out.splitlines()[-1] if out else "exit 2"
            if code != 0:
                return "failed", f"stitch run --backend {backend}: " + "\n".join(out.splitlines()[-8:])
            for name in entry["outputs"]:
                want = np.load(os.path.join(data, "expected", name + ".npy")).astype(np.float64)
                got = np.load(os.path.join(got_dir, name + ".npy")).astype(np.float64)
                if got.shape != want.shape:
                    return "failed", f"{backend} output {name}: shape {got.shape}, PyTorch's {want.shape}"
                excess = np.abs(got - want) - (RTOL * np.abs(want) + ATOL)
                if not np.all(excess <= 0) or not np.all(np.isfinite(got) == np.isfinite(want)):
                    at = np.unravel_index(np.argmax(excess), want.shape)
                    return "failed", f"{backend} output {name}: {got[at]} against PyTorch's {want[at]} at {at}"
                worst = max(worst, float(np.max(np.abs(got - want))) if want.size else 0.0)
    what = (f"planners {planners or 'all'} against the interpreter" if every_planner
            else "the interpreter and the CPU (xla)")
    return "ok", f"{what}; PyTorch's outputs within {worst:.2e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--stitch", required=True)
    parser.add_argument("--refused")
    parser.add_argument("--json")
    parser.add_argument("--planners", help="the planners stitch check runs (default: all)")
    parser.add_argument("--every-planner-once", action="store_true",
                        help="every planner (stitch check) only on each model's first export; the others against "
                             "PyTorch on the interpreter and the CPU's default planner (a quicker check)")
    args = parser.parse_args()
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    refused = read_refused(args.refused)
    known = {e["name"] for e in manifest["exports"]}
    stale = sorted(set(refused) - known)
    results, bad = [], []
    checked_models = set()
    for entry in manifest["exports"]:
        name = entry["name"]
        if "error" in entry:
            results.append({"name": name, "status": "not exported", "detail": entry["error"]})
        else:
            every = not args.every_planner_once or entry["model"] not in checked_models
            checked_models.add(entry["model"])
            status, detail = check_one(entry, args.folder, args.stitch, every, args.planners)
            results.append({"name": name, "status": status, "detail": detail})
            expected = refused.get(name)
            if status == "failed":
                bad.append(f"{name}: {detail}")
            elif status == "refused" and (expected is None or expected not in detail):
                bad.append(f"{name}: refused, not as listed: {detail}")
            elif status == "ok" and expected is not None:
                bad.append(f"{name}: imports now; take it off the refused list")
        r = results[-1]
        print(f"{r['name']:40} {r['status']:13} {r['detail'].splitlines()[0][:160]}", flush=True)
    for name in stale:
        bad.append(f"{name}: on the refused list but not exported")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": manifest.get("torch"), "results": results}, f, indent=1)
    counts = {s: sum(r["status"] == s for r in results) for s in ("ok", "refused", "failed", "not exported")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    for b in bad:
        print("UNEXPECTED: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
