#!/usr/bin/env bash
# Builds the libFuzzer targets (text parser, .npy reader, PTX parser) with clang and runs
# each for a bounded time (seconds each, default 60) from its seed corpus.
# docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_BUILD_FUZZERS=ON -DSTITCH_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz parser_fuzzer npy_fuzzer ptx_parser_fuzz
mkdir -p build-fuzz/corpus/parser build-fuzz/corpus/npy build-fuzz/corpus/ptx
common=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix=build-fuzz/)
echo "fuzz: parser_fuzzer for ${seconds}s"
build-fuzz/fuzz/parser_fuzzer "${common[@]}" -dict=fuzz/parser.dict \
  build-fuzz/corpus/parser tests/ir/corpus tests/ir/kernels bench/workloads 2>&1 | tail -n 8
echo "fuzz: npy_fuzzer for ${seconds}s"
build-fuzz/fuzz/npy_fuzzer "${common[@]}" build-fuzz/corpus/npy tests/tensor/golden 2>&1 | tail -n 8
echo "fuzz: ptx_parser_fuzz for ${seconds}s"
build-fuzz/fuzz/ptx_parser_fuzz "${common[@]}" -dict=fuzz/ptx.dict build-fuzz/corpus/ptx tests/ptx/golden 2>&1 | tail -n 8
