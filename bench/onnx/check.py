"""Checks what bench/onnx/export.py wrote: each export imports, runs right under every
planner (`stitch check`: every planner against the reference interpreter) and matches
eager PyTorch's outputs (`stitch run` on the CPU, default planner).

    python bench/onnx/check.py EXPORT_DIR --stitch PATH/TO/stitch [--refused FILE] [--json OUT]

--refused names the exports expected to be refused, one per line:
`NAME: part of the message` (# comments). An export that fails to import is a failure
unless listed, with a message holding that part; a listed export that imports is a
failure too, so the list says what is refused today and nothing else. Exports the
exporter itself could not write (recorded in manifest.json) are reported and not run.
A dynamic-batch export is checked with `--dim batch=B`, B the batch its inputs have.

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


def check_one(entry, folder, stitch):
    """(status, detail): status ok, refused (stitch's exit 2) or failed."""
    model = os.path.join(folder, entry["file"])
    data = os.path.join(folder, entry["name"])
    inputs = [f"{n}={os.path.join(data, 'inputs', n + '.npy')}" for n in entry["inputs"]]
    dims = []
    if entry["batch"] == "dynamic":
        batch = np.load(os.path.join(data, "inputs", entry["inputs"][0] + ".npy"), mmap_mode="r").shape[0]
        dims = ["--dim", f"batch={batch}"]
    code, out = run([stitch, "check", model, *dims])
    if code == 2:
        return "refused", out.splitlines()[-1] if out else "exit 2"
    if code != 0:
        return "failed", "stitch check: " + "\n".join(out.splitlines()[-8:])
    with tempfile.TemporaryDirectory() as got_dir:
        args = [a for i in inputs for a in ("--input", i)]
        code, out = run([stitch, "run", model, *args, "--output-dir", got_dir])
        if code != 0:
            return "failed", "stitch run: " + "\n".join(out.splitlines()[-8:])
        worst = 0.0
        for name in entry["outputs"]:
            want = np.load(os.path.join(data, "expected", name + ".npy")).astype(np.float64)
            got = np.load(os.path.join(got_dir, name + ".npy")).astype(np.float64)
            if got.shape != want.shape:
                return "failed", f"output {name}: shape {got.shape}, PyTorch's {want.shape}"
            excess = np.abs(got - want) - (RTOL * np.abs(want) + ATOL)
            if not np.all(excess <= 0) or not np.all(np.isfinite(got) == np.isfinite(want)):
                at = np.unravel_index(np.argmax(excess), want.shape)
                return "failed", f"output {name}: {got[at]} against PyTorch's {want[at]} at {at}"
            worst = max(worst, float(np.max(np.abs(got - want))) if want.size else 0.0)
    return "ok", f"every planner against the interpreter; PyTorch's outputs within {worst:.2e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("--stitch", required=True)
    parser.add_argument("--refused")
    parser.add_argument("--json")
    args = parser.parse_args()
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    refused = read_refused(args.refused)
    known = {e["name"] for e in manifest["exports"]}
    stale = sorted(set(refused) - known)
    results, bad = [], []
    for entry in manifest["exports"]:
        name = entry["name"]
        if "error" in entry:
            results.append({"name": name, "status": "not exported", "detail": entry["error"]})
        else:
            status, detail = check_one(entry, args.folder, args.stitch)
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
