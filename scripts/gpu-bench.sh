#!/usr/bin/env bash
# The GPU benchmarks (docs/gpu-check.md, docs/benchmarks.md): every workload's
# entry graph and the Triton-tutorial sweeps under the none, xla and stitch
# planners on the CUDA back end, timed against a device-to-device copy of the
# same byte footprint; then the peers (PyTorch eager, torch.compile, JAX jit) on
# the same graphs, and one combined table and chart. Writes
#   bench/results/gpu-<date>-stitch.json   stitch bench alone (kept whatever the peers do)
#   bench/results/gpu-<date>-peers.json    the peers alone (run_peers.py)
#   bench/results/gpu-<date>.{json,md,svg} stitch and the peers (bench/peers/combine.py)
#   bench/results/gpu-<date>-pyfuser.{json,md}  the PyFuser subjects on lazy arrays on CUDA,
#                                          unfused vs fused (stitch_bench_pyfuser --backend cuda)
#   scripts/gpu-bench.sh [build-dir]     (default: build-gpu; built by scripts/gpu-check.sh)
# Environment: REPEAT, WARMUP (stitch bench's and the peers' --repeat/--warmup),
# PLANNERS (default none,xla,stitch), PEERS (default torch_eager,torch_compile,jax_jit;
# empty: no peers), DEADLINE (epoch seconds: the peers stop 30 s before it),
# ROW_SCHEDULES (forced row schedules to time the row-reduction graphs under),
# MODELS=1 and MODEL_PLANNERS (the model graphs too), TUNE=1 (the row graphs tuned on the device),
# PYFUSER=0 (skip the PyFuser subjects; PYFUSER_ROUNDS, default 3). Exit status: 0 when everything ran; 1 when stitch bench failed;
# 3 when the stitch numbers were written but the sweeps, the peers or the
# combination failed.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-gpu}
repeat=${REPEAT:-20}
warmup=${WARMUP:-3}
planners=${PLANNERS:-none,xla,stitch}
peers=${PEERS-torch_eager,torch_compile,jax_jit}

say() { echo "gpu-bench: $*"; }
if [ ! -x "$build_dir/stitch" ]; then
  say "FAILED: no $build_dir/stitch; build it first (scripts/gpu-check.sh --steps build $build_dir)" >&2
  exit 1
fi
# The dependency bundle's library paths, when gpu-check.sh built against it.
if [ -f "$build_dir/gpu-check.env" ]; then
  # shellcheck disable=SC1091
  . "$build_dir/gpu-check.env"
fi
export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-$(cd "$build_dir" && pwd)/kernel-cache}

date=$(date -u +%Y-%m-%d)
mkdir -p bench/results
base=bench/results/gpu-$date
work=$build_dir/gpu-bench
rm -rf "$work"
mkdir -p "$work/sweeps"
partial=0

# The sweep graphs (the Triton tutorials' size sweeps), written fresh each run.
sweeps=()
if [ -f bench/peers/sweeps.py ]; then
  say "python3 bench/peers/sweeps.py $work/sweeps"
  if python3 bench/peers/sweeps.py "$work/sweeps"; then
    shopt -s nullglob
    sweeps=("$work"/sweeps/*.stitch)
    shopt -u nullglob
    say "${#sweeps[@]} sweep graphs"
  else
    say "warning: bench/peers/sweeps.py failed; benchmarking the workloads without the sweeps"
    partial=1
  fi
else
  say "warning: no bench/peers/sweeps.py; benchmarking the workloads without the sweeps"
  partial=1
fi

say "$build_dir/stitch bench bench/workloads/*.stitch (+${#sweeps[@]} sweeps) --backend cuda --planners $planners --repeat $repeat --warmup $warmup"
if ! "$build_dir/stitch" bench bench/workloads/*.stitch "${sweeps[@]}" --backend cuda --planners "$planners" \
  --repeat "$repeat" --warmup "$warmup" --json "$work/stitch.json"; then
  say "FAILED: stitch bench --backend cuda"
  exit 1
fi
cp "$work/stitch.json" "$base-stitch.json"
say "wrote $base-stitch.json"

# Several stitch bench documents as one JSON object, keyed by each file's name
# less PREFIX and ".json".   merge_documents OUT PREFIX FILE...
merge_documents() {
  local out=$1 prefix=$2
  shift 2
  python3 - "$out" "$prefix" "$@" <<'PY'
import json, os, sys
out, prefix, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
doc = {os.path.basename(p)[len(prefix):-len(".json")]: json.load(open(p)) for p in paths}
json.dump(doc, open(out, "w"), indent=1)
PY
  say "wrote $out"
}

# Seconds left before DEADLINE less MARGIN; empty without a DEADLINE.
seconds_left() { [ -n "${DEADLINE:-}" ] && echo $((DEADLINE - $(date +%s) - $1)); }

peers_json=""
if [ -n "$peers" ]; then
  if [ -f bench/peers/run_peers.py ]; then
    say "python3 bench/peers/run_peers.py --peers $peers --device cuda"
    # They run right after the stitch numbers, before the optional extras below, so
    # that a deadline cuts the extras rather than the comparison. With DEADLINE
    # (epoch seconds) they stop 30 s before it, keeping the rows they measured
    # (run_peers.py writes its JSON after every workload).
    limit=()
    if left=$(seconds_left 30); then
      ((left > 10)) || left=10
      limit=(timeout "$left")
      say "the peers get ${left}s (DEADLINE)"
    fi
    if "${limit[@]}" python3 bench/peers/run_peers.py --workloads bench/workloads --sweeps --peers "$peers" \
      --repeat "$repeat" --warmup "$warmup" --device cuda --json "$work/peers.json"; then
      peers_json=$work/peers.json
    elif [ -s "$work/peers.json" ]; then
      say "warning: bench/peers/run_peers.py failed or was stopped; using the peer results it wrote"
      peers_json=$work/peers.json
      partial=1
    else
      say "warning: bench/peers/run_peers.py failed and wrote nothing; no peer columns"
      partial=1
    fi
  else
    say "warning: no bench/peers/run_peers.py; no peer columns"
    partial=1
  fi
fi

[ -n "$peers_json" ] && cp "$peers_json" "$base-peers.json" && say "wrote $base-peers.json"

# With ROW_SCHEDULES (a comma-separated subset of block-per-row, warp-per-row,
# multi-row-per-warp): the row-reduction graphs again under the stitch planner
# with each row schedule forced, the data for the GPU's default choice
# (bench/results/gpu-<date>-rows.json: one stitch bench document per schedule).
if [ -n "${ROW_SCHEDULES:-}" ]; then
  row_graphs=(bench/workloads/{layernorm,log_softmax,residual_layernorm,rmsnorm,softmax,softmax_explicit}.stitch)
  for f in "${sweeps[@]}"; do row_graphs+=("$f"); done
  docs=()
  for rs in ${ROW_SCHEDULES//,/ }; do
    say "$build_dir/stitch bench (${#row_graphs[@]} row graphs) --backend cuda --planners stitch --row-schedule $rs"
    if "$build_dir/stitch" bench "${row_graphs[@]}" --backend cuda --planners stitch --row-schedule "$rs" \
      --repeat "$repeat" --warmup "$warmup" --json "$work/rows-$rs.json"; then
      docs+=("$work/rows-$rs.json")
      # After each schedule, so that a run stopped part way keeps what it timed.
      merge_documents "$base-rows.json" rows- "${docs[@]}"
    else
      say "warning: stitch bench --row-schedule $rs failed"
      partial=1
    fi
  done
fi

# The PyFuser subjects (docs/lazy.md, Back ends) on lazy arrays on CUDA:
# bench/results/gpu-<date>-pyfuser.{json,md}.
if [ "${PYFUSER:-1}" = 1 ]; then
  pyfuser=$build_dir/bench/stitch_bench_pyfuser
  say "$pyfuser --backend cuda --rounds ${PYFUSER_ROUNDS:-3}"
  if [ ! -x "$pyfuser" ] || ! "$pyfuser" --backend cuda --rounds "${PYFUSER_ROUNDS:-3}" --json "$base-pyfuser.json" \
    | tee "$base-pyfuser.md"; then
    say "warning: stitch_bench_pyfuser --backend cuda failed"
    partial=1
  fi
fi

# With TUNE=1: the row-reduction graphs under the stitch planner untuned and
# tuned on the device (`stitch+tune`; docs/tuning.md, On a GPU),
# bench/results/gpu-<date>-tune.json.
if [ "${TUNE:-0}" = 1 ]; then
  tune_graphs=(bench/workloads/{layernorm,log_softmax,residual_layernorm,rmsnorm,softmax,softmax_explicit}.stitch)
  say "$build_dir/stitch bench (${#tune_graphs[@]} row graphs) --backend cuda --planners stitch --tune"
  if ! "$build_dir/stitch" bench "${tune_graphs[@]}" --backend cuda --planners stitch --tune \
    --repeat "$repeat" --warmup "$warmup" --json "$base-tune.json"; then
    say "warning: stitch bench --backend cuda --tune failed"
    partial=1
  fi
fi

# With MODELS=1: the model graphs of docs/models.md (BERT-base, GPT-2 x12, T5
# block, DIEN), each its own stitch bench under MODEL_PLANNERS (default
# xla,stitch), stopped 20 s before DEADLINE when one is set
# (bench/results/gpu-<date>-models.json: one document per model).
if [ "${MODELS:-0}" = 1 ]; then
  mkdir -p "$work/models"
  python3 bench/models/bert.py >"$work/models/bert.stitch"
  python3 bench/models/gpt2_block.py --blocks 12 >"$work/models/gpt2.stitch"
  python3 bench/models/t5_block.py >"$work/models/t5.stitch"
  python3 bench/models/dien.py >"$work/models/dien.stitch"
  docs=()
  for m in bert gpt2 t5 dien; do
    limit=()
    if left=$(seconds_left 20); then
      if ((left < 15)); then say "warning: no time left for the model $m (DEADLINE)"; partial=1; break; fi
      limit=(timeout "$left")
    fi
    say "$build_dir/stitch bench $m --backend cuda --planners ${MODEL_PLANNERS:-xla,stitch}"
    if "${limit[@]}" "$build_dir/stitch" bench "$work/models/$m.stitch" --backend cuda \
      --planners "${MODEL_PLANNERS:-xla,stitch}" --repeat "$repeat" --warmup "$warmup" --json "$work/models/$m.json"; then
      docs+=("$work/models/$m.json")
    else
      say "warning: stitch bench of the model $m failed or was stopped"
      partial=1
    fi
  done
  if ((${#docs[@]})); then merge_documents "$base-models.json" "" "${docs[@]}"; fi
fi

combined=0
if [ -f bench/peers/combine.py ]; then
  args=(--stitch "$work/stitch.json" --out "$base")
  [ -n "$peers_json" ] && args+=(--peers "$peers_json")
  say "python3 bench/peers/combine.py ${args[*]}"
  if python3 bench/peers/combine.py "${args[@]}"; then
    combined=1
    for ext in json md svg; do [ -f "$base.$ext" ] && say "wrote $base.$ext"; done
  else
    say "warning: bench/peers/combine.py failed"
    partial=1
  fi
else
  say "warning: no bench/peers/combine.py"
  partial=1
fi
if ((!combined)); then
  # Keep what was measured: the peers' raw results, and a chart of stitch alone.
  if python3 scripts/plot_bench.py "$base-stitch.json" -o "$base.svg"; then
    say "wrote $base.svg (stitch only)"
  fi
fi

if ((partial)); then
  say "FAILED in part: the stitch numbers are in $base-stitch.json; see the warnings above"
  exit 3
fi
say "done"
