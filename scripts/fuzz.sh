#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for SECONDS (default 60)
# from its seed corpus: the graph text parser, the .npy reader, the ONNX
# importer, the kernel language and the PTX parser. docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 onnx_fuzzer
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(parser_fuzzer npy_fuzzer onnx_fuzzer kernel_lang_fuzzer ptx_parser_fuzz)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_BUILD_FUZZERS=ON -DSTITCH_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz "${targets[@]}"
common=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix=build-fuzz/)

# Kernel seeds: one file per kernel of the kernel corpora, so the mutator
# starts from small inputs.
kernel_seeds=build-fuzz/seeds/kernel
if [ ! -d "$kernel_seeds" ]; then
  mkdir -p "$kernel_seeds"
  for f in tests/ir/kernels/corpus.stitch bench/pyfuser/subjects.stitch; do
    awk -v out="$kernel_seeds/$(basename "$f" .stitch)" \
      '/^kernel /{n++} n{print > (out "_" n ".stitch")}' "$f"
  done
fi
# ONNX seeds: small models of every supported op group, written by
# fuzz/make_onnx_seeds.py (never committed), and the model of every ONNX backend node test
# (docs/onnx.md), where Debian's python3-onnx is installed.
onnx_seeds=build-fuzz/seeds/onnx
if [ ! -d "$onnx_seeds" ] && /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  mkdir -p "$onnx_seeds"
  /usr/bin/python3 fuzz/make_onnx_seeds.py "$onnx_seeds" >/dev/null
fi
mkdir -p "$onnx_seeds"
onnx_node_seeds=build-fuzz/seeds/onnx_node
if [ ! -d "$onnx_node_seeds" ] && /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  tmp=$(mktemp -d)
  if /usr/bin/python3 scripts/gen_onnx_node_tests.py "$tmp" >/dev/null 2>&1; then
    mkdir -p "$onnx_node_seeds"
    for m in "$tmp"/node/*/model.onnx; do
      cp "$m" "$onnx_node_seeds/$(basename "$(dirname "$m")").onnx"
    done
  fi
  rm -rf "$tmp"
fi
mkdir -p "$onnx_node_seeds"

mkdir -p build-fuzz/corpus/{parser,npy,onnx,kernel,ptx}
run() {
  local target=$1; shift
  echo "fuzz: $target for ${seconds}s"
  "build-fuzz/fuzz/$target" "${common[@]}" "$@" 2>&1 | tail -n 8
}
for t in "${targets[@]}"; do
  case $t in
    parser_fuzzer)
      run parser_fuzzer -dict=fuzz/parser.dict build-fuzz/corpus/parser tests/ir/corpus tests/ir/kernels \
        bench/workloads ;;
    npy_fuzzer) run npy_fuzzer build-fuzz/corpus/npy tests/tensor/golden ;;
    onnx_fuzzer)
      run onnx_fuzzer -dict=fuzz/onnx.dict build-fuzz/corpus/onnx "$onnx_seeds" "$onnx_node_seeds" ;;
    kernel_lang_fuzzer)
      run kernel_lang_fuzzer -dict=fuzz/kernel.dict build-fuzz/corpus/kernel "$kernel_seeds" ;;
    ptx_parser_fuzz) run ptx_parser_fuzz -dict=fuzz/ptx.dict build-fuzz/corpus/ptx tests/ptx/golden ;;
    *) echo "fuzz.sh: unknown target $t (known: ${all[*]})" >&2; exit 2 ;;
  esac
done
