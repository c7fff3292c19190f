#!/usr/bin/env bash
# Every corpus graph (bench/workloads/*.stitch) as real NVCC output: the CUDA
# emitter's C (stitch emit --backend cuda), nvcc -ptx -O3 for sm_75 and
# sm_90, then `stitch ptx print` must be a fixed point and ptxas must accept
# the printed text (docs/ptx.md, Tests). Registered by tests/CMakeLists.txt.
#
#   corpus_roundtrip.sh STITCH NVCC PTXAS WORK_DIR CORPUS_DIR
set -euo pipefail
stitch=$1 nvcc=$2 ptxas=$3 work=$4 corpus=$5
rm -rf "$work"
mkdir -p "$work"
jobs=$(nproc)

for f in "$corpus"/*.stitch; do
  "$stitch" emit "$f" --backend cuda > "$work/$(basename "$f" .stitch).cu"
done
# nvcc dominates the time: one process per file and architecture, nproc at a time.
for cu in "$work"/*.cu; do
  for arch in sm_75 sm_90; do echo "$cu $arch"; done
done | xargs -P "$jobs" -n 2 sh -c '"$0" -ptx -O3 -w -arch="$2" "$1" -o "${1%.cu}.$2.ptx"' "$nvcc"

exec "$(dirname "$0")/roundtrip_files.sh" "$stitch" "$ptxas" "$work"/*.sm_*.ptx
