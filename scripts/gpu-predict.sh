#!/usr/bin/env bash
# The GPU model's predictions for this commit, made without a GPU (docs/gpu-model.md,
# Predictions before a GPU run): the workloads and sweeps that scripts/gpu-bench.sh
# times, under the same planners, simulated on cuda-sim and predicted for TARGET;
# then the row-reduction graphs under each forced row schedule, as gpu-bench.sh's
# ROW_SCHEDULES runs them. Writes
#   bench/results/gpu-model-<date>T<HHMM>-<target>-predicted.json        stitch bench, one document
#   bench/results/gpu-model-<date>T<HHMM>-<target>-predicted-rows.json   one document per schedule
# each with the commit it was made at (machine.commit; "-dirty" when the tree had
# changes), which scripts/gpu-check.sh puts beside its measurements.
#   scripts/gpu-predict.sh [build-dir]      (default: build)
# Environment: TARGET (h200 or h100; default h200), PLANNERS (default none,xla,stitch),
# ROW_SCHEDULES (default block-per-row,warp-per-row,multi-row-per-warp; empty: none).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
target=${TARGET:-h200}
planners=${PLANNERS:-none,xla,stitch}
row_schedules=${ROW_SCHEDULES-block-per-row,warp-per-row,multi-row-per-warp}
say() { echo "gpu-predict: $*"; }
if [ ! -x "$build_dir/stitch" ]; then
  say "no $build_dir/stitch; build it first (scripts/setup.sh $build_dir)" >&2
  exit 2
fi

# The time of day too: two predictions of one day (before and after a change) keep
# both files, and the later sorts last (beside.py takes the last).
date=$(date -u +%Y-%m-%dT%H%M)
base=bench/results/gpu-model-$date-$target-predicted
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then commit="$commit-dirty"; fi

python3 bench/peers/sweeps.py "$work/sweeps" >/dev/null
sweeps=("$work"/sweeps/*.stitch)

# Adds the commit to stitch bench documents and writes them to OUT: one document
# (single), or a set keyed by row schedule as gpu-bench.sh keys its rows runs (keyed).
#   stamp single|keyed OUT FILE...
stamp() {
  python3 - "$commit" "$@" <<'EOF'
import json, sys
commit, form, out, *paths = sys.argv[1:]
docs = {}
for path in paths:
    with open(path) as f:
        doc = json.load(f)
    doc.setdefault("machine", {})["commit"] = commit
    docs[path] = doc
if form == "single":
    result = docs[paths[0]]
else:
    result = {p.rsplit("/", 1)[-1][len("rows-"):-len(".json")]: d for p, d in docs.items()}
with open(out, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
EOF
}

say "$build_dir/stitch bench bench/workloads/*.stitch (+${#sweeps[@]} sweeps) --backend cuda-sim --profile $target --planners $planners"
"$build_dir/stitch" bench bench/workloads/*.stitch "${sweeps[@]}" --backend cuda-sim --profile "$target" \
  --planners "$planners" --json "$work/stitch.json" >/dev/null
stamp single "$base.json" "$work/stitch.json"
say "wrote $base.json (commit $commit)"

if [ -n "$row_schedules" ]; then
  row_graphs=(bench/workloads/{layernorm,log_softmax,residual_layernorm,rmsnorm,softmax,softmax_explicit}.stitch)
  row_graphs+=("${sweeps[@]}")
  docs=()
  for rs in ${row_schedules//,/ }; do
    say "$build_dir/stitch bench (${#row_graphs[@]} row graphs) --backend cuda-sim --profile $target --row-schedule $rs"
    "$build_dir/stitch" bench "${row_graphs[@]}" --backend cuda-sim --profile "$target" --planners stitch \
      --row-schedule "$rs" --json "$work/rows-$rs.json" >/dev/null
    docs+=("$work/rows-$rs.json")
  done
  stamp keyed "$base-rows.json" "${docs[@]}"
  say "wrote $base-rows.json"
fi
