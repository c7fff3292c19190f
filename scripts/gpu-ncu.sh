#!/usr/bin/env bash
# Hardware counters beside the GPU model (docs/gpu-model.md, Hardware counters beside
# the model): Nsight Compute (ncu) reads a few counters of the stitch planner's kernels
# for one elementwise and four row-reduction workloads, and bench/gpu_model/ncu_beside.py
# puts them beside the model's committed predictions. scripts/gpu-check.sh runs it after
# its benchmarks.
#   scripts/gpu-ncu.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/ncu.csv (the raw page), ncu.log (ncu's own output), ncu-bench.json and
# ncu-bench.log (stitch bench's), ncu.md (the joined table).
# Environment: GPU_CHECK_MODEL_TARGET (default h200), the predictions' target.
# Exit status 0 also when there is no ncu or it fails (a `gpu-ncu: warning:` line says
# why); 2 on bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "gpu-ncu: $*"; }
if (($# != 2)); then
  echo "usage: scripts/gpu-ncu.sh BUILD_DIR OUT_DIR" >&2
  exit 2
fi
build_dir=$1
out=$2
if [ ! -x "$build_dir/stitch" ]; then
  say "no $build_dir/stitch" >&2
  exit 2
fi
mkdir -p "$out"

# ncu on PATH, else the newest under /opt/nvidia/nsight-compute.
ncu=$(command -v ncu || true)
if [ -z "$ncu" ]; then
  ncu=$(printf '%s\n' /opt/nvidia/nsight-compute/*/ncu | sort -V | tail -n 1)
fi
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then
  say "warning: no ncu; no hardware counters (neither on PATH nor under /opt/nvidia/nsight-compute)"
  exit 0
fi

# The dependency bundle's library paths, when gpu-check.sh built against it.
if [ -f "$build_dir/gpu-check.env" ]; then
  # shellcheck disable=SC1091
  . "$build_dir/gpu-check.env"
fi
export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-$(cd "$build_dir" && pwd)/kernel-cache}

metrics=dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
metrics+=,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
# The shared-memory configuration the driver chose (the carveout; docs/cuda-runtime.md).
metrics+=,launch__shared_mem_config_size
workloads=(bench/workloads/{add,softmax,layernorm,rmsnorm}.stitch)
# A softmax sweep point whose row caches need more than 132 KiB per SM (2026-12-04 notes).
if python3 bench/peers/sweeps.py "$out/sweeps" >/dev/null 2>&1 && [ -f "$out/sweeps/triton_softmax_n6144.stitch" ]; then
  workloads+=("$out/sweeps/triton_softmax_n6144.stitch")
fi

say "$("$ncu" --version 2>&1 | tail -n 1)"
say "$ncu --clock-control none --kernel-name 'regex:^k_' --launch-count 40 (${#workloads[@]} workloads, stitch planner)"
# --log-file takes ncu's output (the CSV, and its ==PROF== lines, which are filtered
# out below); the program's own output goes to ncu-bench.log.
rm -f "$out/ncu.log" "$out/ncu.csv"
ncu_status=0
timeout 300 "$ncu" --clock-control none --kernel-name 'regex:^k_' --launch-count 40 \
  --csv --page raw --print-units base --metrics "$metrics" --log-file "$out/ncu.log" \
  "$build_dir/stitch" bench "${workloads[@]}" --backend cuda --planners stitch --repeat 1 --warmup 0 \
  --json "$out/ncu-bench.json" >"$out/ncu-bench.log" 2>&1 || ncu_status=$?
# The CSV's lines are the quoted ones (from the program's output too, should ncu have
# written there).
cat "$out/ncu.log" "$out/ncu-bench.log" 2>/dev/null | grep '^"' >"$out/ncu.csv" || true
if ((ncu_status != 0)); then
  if ((ncu_status == 124)); then
    say "warning: ncu was stopped after 300 s"
  else
    say "warning: ncu failed (exit $ncu_status)"
  fi
  if cat "$out/ncu.log" "$out/ncu-bench.log" 2>/dev/null | grep -q LibraryNotLoaded; then
    say "warning: the profiler could not load (LibraryNotLoaded: the gVisor runtime has no counters; Firecracker has)"
  fi
  # ncu's own messages (==PROF==, ==ERROR==, ==WARNING==), then the program's last lines.
  { cat "$out/ncu.log" "$out/ncu-bench.log" 2>/dev/null | grep -h '^==' | tail -n 6
    grep -v '^[="]' "$out/ncu-bench.log" 2>/dev/null | tail -n 3; } | sed 's/^/  /' || true
fi
if [ ! -s "$out/ncu.csv" ]; then
  say "warning: ncu wrote no counters; nothing to put beside the model"
  exit 0
fi
say "wrote $out/ncu.csv"
python3 bench/gpu_model/ncu_beside.py --csv "$out/ncu.csv" --predicted bench/results \
  --target "${GPU_CHECK_MODEL_TARGET:-h200}" --md "$out/ncu.md" || say "warning: bench/gpu_model/ncu_beside.py failed"
exit 0
