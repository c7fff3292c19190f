#!/usr/bin/env bash
# The soak (docs/testing.md, Soak): N random graphs of each family (varied op
# mixes, the stitched patterns) under every planner on the CPU and cuda-sim back
# ends against the reference interpreter, and N random lazy programs of
# kernel-language calls, fused and unfused. A failing graph is shrunk to a
# small one that still fails and written to <build>/soak-failures/.
#   scripts/soak.sh N [FIRST_SEED] [build-dir]     (FIRST_SEED default 100000)
# STITCH_SOAK_PLANNERS / STITCH_SOAK_BACKENDS narrow the run (comma lists).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/soak.sh N [FIRST_SEED] [build-dir]}
first=${2:-100000}
build=${3:-build}
scripts/setup.sh --tests "$build"
ninja -C "$build" test_soak stitch_cuda_sim 2>/dev/null || ninja -C "$build" test_soak
STITCH_SOAK_GRAPHS=$n STITCH_SOAK_FIRST_SEED=$first STITCH_SOAK_OUT="$build/soak-failures" "$build/tests/test_soak"
