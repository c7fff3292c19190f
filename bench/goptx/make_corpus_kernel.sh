#!/bin/sh
# The CUDA C that Stitch's CUDA emitter writes for one corpus workload, its
# full graph's kernels and its _small graph's in one file (the benchmark's
# --scale full and small), written at build time (bench/goptx/CMakeLists.txt).
#   make_corpus_kernel.sh STITCH WORKLOAD.stitch GRAPH OUT.cu
set -eu
stitch=$1 workload=$2 graph=$3 out=$4
{
  echo "// Generated at build time from $(basename "$workload") (stitch emit --backend cuda, graphs $graph and ${graph}_small)."
  "$stitch" emit --backend cuda "$workload" --graph "$graph"
  "$stitch" emit --backend cuda "$workload" --graph "${graph}_small" | sed -n '/^extern "C"/,$p'
} > "$out.tmp"
mv "$out.tmp" "$out"
