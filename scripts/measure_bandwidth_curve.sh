#!/usr/bin/env bash
# Prints this machine's copy-bandwidth curve M(V) ("bytes_moved gbps" per line),
# compiled with the flags the CPU JIT uses. The table in
# src/fusion/delta_evaluator.cpp was measured with it (docs/fusion.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
c++ -std=c++17 -O3 -march=native -fopenmp -ffp-contract=off bench/calibration/copy_curve.cpp -o "$out/copy_curve"
"$out/copy_curve"
