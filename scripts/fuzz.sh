#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for SECONDS (default 60)
# from its seed corpus: the graph text parser, the .npy reader, the ONNX
# importer, the kernel language, the PTX parser and the fusion planners.
# docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 onnx_fuzzer
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(parser_fuzzer npy_fuzzer onnx_fuzzer kernel_lang_fuzzer ptx_parser_fuzz planner_fuzzer)
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

# Planner seeds: the planner fuzzer reads its input as decisions
# (fuzz/planner_fuzzer.cpp), so a seed is a header byte (options, mode), for
# model-shaped graphs the stream's shape and the block's repeats and length,
# then a fixed byte ramp (i * step mod 256) for the ops: free graphs under the
# CPU's options, the GPU's and a fusion cap, and model-shaped ones with a
# static and a symbolic batch and under the GPU's options.
planner_seeds=build-fuzz/seeds/planner
if [ ! -d "$planner_seeds" ]; then
  mkdir -p "$planner_seeds"
  seed() {  # NAME STEP LENGTH HEADER_BYTE...
    local name=$1 step=$2 length=$3 format="" b i
    shift 3
    for b in "$@"; do format+=$(printf '\\x%02x' "$b"); done
    for ((i = 1; i <= length; ++i)); do format+=$(printf '\\x%02x' $((i * step % 256))); done
    # shellcheck disable=SC2059  # the format is \xNN escapes only
    printf "$format" > "$planner_seeds/$name"
  }
  seed free_cpu 37 96 0
  seed free_gpu 53 96 128
  seed free_cap 11 64 192 7
  seed model_static 29 32 7 128 1 4 5 40 4
  seed model_symbolic 71 24 71 16 2 1 96 2
  seed model_gpu 101 48 135 200 3 3 2 20 10
fi

mkdir -p build-fuzz/corpus/{parser,npy,onnx,kernel,ptx,planner}
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
    planner_fuzzer)
      # libFuzzer replays the whole corpus before the clock starts, and this
      # target runs a few inputs a second: a run shorter than two minutes (the
      # test command's) starts from the seeds alone, in a scratch corpus.
      corpus=build-fuzz/corpus/planner
      if [ "$seconds" -lt 120 ]; then
        corpus=build-fuzz/corpus/planner_short
        rm -rf "$corpus" && mkdir -p "$corpus"
      fi
      run planner_fuzzer "$corpus" "$planner_seeds" ;;
    *) echo "fuzz.sh: unknown target $t (known: ${all[*]})" >&2; exit 2 ;;
  esac
done
