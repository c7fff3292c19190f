#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (CTest), then a bounded
# fuzzing run of the text parser.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests --python build
ctest --test-dir build --output-on-failure -j "$(nproc)"
scripts/fuzz.sh 30
