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
