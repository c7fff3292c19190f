#!/usr/bin/env bash
# Builds the libFuzzer target for the text parser with clang and runs it for
# a bounded time (seconds, default 60) from the seed corpus. docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_BUILD_FUZZERS=ON -DSTITCH_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz parser_fuzzer
mkdir -p build-fuzz/corpus
build-fuzz/fuzz/parser_fuzzer -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 build-fuzz/corpus tests/ir/corpus bench/workloads 2>&1 | tail -n 12
