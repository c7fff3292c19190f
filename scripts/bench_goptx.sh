#!/usr/bin/env bash
# GoPTX's comparison (docs/goptx-bench.md): kernel pairs run sequentially,
# concurrently, packed and woven (concat, latency), timed with CUDA events.
#   scripts/bench_goptx.sh [build-dir]              on a GPU: build, measure, write bench/results/goptx-<date>-<gpu>.{json,md}
#   scripts/bench_goptx.sh --sim [build-dir]        the same path on the simulated driver, small scale, 1 run
#                                                   (a smoke run: its times are the interpreter's, never GPU figures)
#   scripts/bench_goptx.sh --estimates [build-dir]  no GPU: ptxas figures, H100 occupancy, latency-model estimates
# The GPU run builds with scripts/gpu-check.sh (its dependency bundle where the
# system lacks the packages) and, when $OUT is set (the device tool's output
# folder), copies the results there. Environment: REPEATS (default 30),
# WARMUP (5), RESULTS (the results name).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
mode=gpu
case ${1:-} in
  --sim) mode=sim; shift ;;
  --estimates) mode=estimates; shift ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  -*) echo "bench_goptx: unknown option $1" >&2; exit 2 ;;
esac
build=${1:-build-goptx-bench}
today=$(date +%F)
bench=$build/bench/goptx/stitch_goptx_bench

if [ "$mode" = gpu ]; then
  GPU_CHECK_TARGETS="stitch_goptx_bench" scripts/gpu-check.sh --steps facts,build "$build"
  eval "$(scripts/gpu-check.sh --env "$build")"
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr 'A-Z ' 'a-z\n' | grep -E '^[a-z]?[0-9]{2,4}$' | head -n 1 || true)
  results=${RESULTS:-goptx-$today-${gpu:-gpu}}
  "$bench" --results "$results" --warmup "${WARMUP:-5}" --repeats "${REPEATS:-30}"
  if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    cp "bench/results/$results.json" "bench/results/$results.md" "$OUT/"
  fi
  exit 0
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
ninja -C "$build" -j "${JOBS:-1}" stitch_goptx_bench stitch_cuda_sim
if [ "$mode" = sim ]; then
  "$bench" --driver "$build/libstitch_cuda_sim.so" --scale small --warmup 0 --repeats 1 \
    --results "goptx-sim-$today" --out-dir "$build/bench/goptx/sim"
else
  "$bench" --estimates --scale small --results "${RESULTS:-goptx-estimates-$today}"
fi
