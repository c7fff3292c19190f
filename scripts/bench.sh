#!/usr/bin/env bash
# The CPU benchmarks (docs/benchmarks.md): every workload's entry graph under
# the none, xla and stitch planners (PLANNERS overrides), timed against a copy
# of the same byte footprint,
# plus the hand-written references when that binary is built. Writes
# bench/results/cpu-<date>.json and its chart cpu-<date>.svg.
#   scripts/bench.sh [build-dir]     (default: build)
# REPEAT and WARMUP (environment) override stitch bench's --repeat and --warmup.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
repeat=${REPEAT:-10}
warmup=${WARMUP:-2}
planners=${PLANNERS:-none,xla,stitch}

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=ON >/dev/null
fi
targets=(stitch)
if ninja -C "$build_dir" -t targets all 2>/dev/null | grep -q '^stitch_bench_reference:'; then
  targets+=(stitch_bench_reference)
fi
ninja -C "$build_dir" "${targets[@]}"

date=$(date -u +%Y-%m-%d)
mkdir -p bench/results
json=bench/results/cpu-$date.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$build_dir/stitch" bench bench/workloads/*.stitch --backend cpu --planners "$planners" \
  --repeat "$repeat" --warmup "$warmup" --json "$scratch/stitch.json"

reference=$(find "$build_dir" -name stitch_bench_reference -type f -perm -u+x 2>/dev/null | head -n 1)
if [ -n "$reference" ]; then
  echo "== $reference --repeat $repeat"
  if ! "$reference" --repeat "$repeat" >"$scratch/reference.json"; then
    echo "bench.sh: $reference failed; the results have no reference rows" >&2
    rm -f "$scratch/reference.json"
  fi
else
  echo "bench.sh: no stitch_bench_reference in $build_dir; the results have no reference rows"
fi

# Reference rows join the results as planner "reference", their fraction of
# copy taken against the copy stitch bench measured on the same workload.
python3 - "$scratch/stitch.json" "$scratch/reference.json" "$json" <<'PY'
import json, os, sys
stitch_path, reference_path, out_path = sys.argv[1:]
doc = json.load(open(stitch_path))
if os.path.exists(reference_path):
    reference = json.load(open(reference_path))
    copy = {r["workload"]: r["copy_gbps"] for r in doc["results"] if "copy_gbps" in r}
    for r in reference.get("results", []):
        if r.get("variant") != "reference" or r.get("workload") not in copy:
            continue
        doc["results"].append({
            "workload": r["workload"], "planner": "reference", "kernels": None,
            "bytes_min": r["bytes_min"], "median_s": r["median_s"], "gbps": r["gbps"],
            "fraction_of_copy": r["gbps"] / copy[r["workload"]], "copy_gbps": copy[r["workload"]],
            "source": "stitch_bench_reference"})
    doc["reference_run"] = reference
json.dump(doc, open(out_path, "w"), indent=2)
open(out_path, "a").write("\n")
PY
python3 scripts/plot_bench.py "$json" -o "bench/results/cpu-$date.svg"
echo "bench.sh: wrote $json"
