#!/usr/bin/env bash
# The main demo: set up, then run a few workloads of the corpus and show results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
stitch=build/stitch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for w in layernorm softmax gelu_tanh residual_layernorm jacobi1d babelstream_triad; do
  echo "== stitch run bench/workloads/$w.stitch --graph ${w}_small --backend interp --random-inputs 1"
  "$stitch" run "bench/workloads/$w.stitch" --graph "${w}_small" --backend interp --random-inputs 1 \
    --output-dir "$out/$w"
done

echo "== the canonical form of softmax_small (composite expanded, broadcasts explicit)"
"$stitch" print bench/workloads/softmax.stitch --graph softmax_small

echo "== full-size LayerNorm on the interpreter, results written as .npy"
time "$stitch" run bench/workloads/layernorm.stitch --backend interp --random-inputs 1 --output-dir "$out/ln"
ls -l "$out/ln"

echo "== the same LayerNorm fused by the xla planner and run on the CPU back end (cold, then from the kernel cache)"
export STITCH_CACHE_DIR="$out/cache"
for attempt in cold cached; do
  echo "-- $attempt"
  time STITCH_DUMP=cache "$stitch" run bench/workloads/layernorm.stitch --backend cpu --planner xla --random-inputs 1 \
    --output-dir "$out/ln_cpu"
done
echo "== the fusion plan of softmax_small under xla"
STITCH_DUMP=plan "$stitch" run bench/workloads/softmax.stitch --graph softmax_small --backend cpu --planner xla \
  --random-inputs 1 2>&1 >/dev/null | head -n 20

echo "== stitch check: every planner x the CPU back end against the interpreter"
for w in softmax layernorm bias_gelu; do
  "$stitch" check "bench/workloads/$w.stitch" --graph "${w}_small"
done

echo "== the stitch planner: softmax_small in one kernel, its schedule and shared memory as the latency evaluator chose them"
"$stitch" plan bench/workloads/softmax.stitch --graph softmax_small --planner stitch --explain --target sm_90 | tail -n 8

echo "== stitch bench: none vs xla vs stitch against the copy bandwidth measured in the same run (full-size graphs)"
"$stitch" bench bench/workloads/swish.stitch bench/workloads/layernorm.stitch bench/workloads/softmax.stitch \
  --planners none,xla,stitch --repeat 5 --warmup 1

