#!/usr/bin/env bash
# The CPU benchmarks (docs/benchmarks.md): every workload's entry graph under
# the none, xla and stitch planners (PLANNERS overrides), timed against a copy
# of the same byte footprint,
# plus the hand-written references when that binary is built. Writes
# bench/results/cpu-<date>.json and its chart cpu-<date>.svg (RESULTS_NAME
# replaces cpu-<date>, e.g. cpu-2026-11-25-epyc for a second machine's run on one day).
#   scripts/bench.sh [--peers] [build-dir]     (default: build)
# REPEAT and WARMUP (environment) override stitch bench's --repeat and --warmup;
# WORKLOADS="swish layernorm triton_softmax_n1024" times only those graphs.
#
# --peers (docs/benchmarks.md, Peers) adds the Triton tutorial sweep points and
# PyTorch eager, torch.compile and jax.jit on the CPU, from the virtual
# environment that scripts/peers-venv.sh creates in PEERS_VENV (default
# .venv-peers; where it cannot, the peers are skipped and the run says so). In
# ROUNDS (default 3) alternating rounds it runs stitch bench (outputs reused),
# stitch bench --fresh-outputs, stitch bench under jemalloc, and the peers
# (PEERS, default torch_eager,torch_compile,jax_jit) with the default allocator,
# the torch peers once more with their opt-in huge pages (THP_MEM_ALLOC_ENABLE=1,
# the page policy Stitch's own storage has; docs/benchmarks.md, Peers) and
# under jemalloc: LD_PRELOAD of Debian's libjemalloc2 with MALLOC_CONF set
# to JEMALLOC_CONF (default dirty_decay_ms:-1,muzzy_decay_ms:-1, so that freed
# pages serve the next call, which jemalloc's default decay does not do for
# outputs of tens of MiB). The first peer run checks every peer against numpy
# in float64. Each figure is the median over the rounds. Also writes
# cpu-<date>.md (the table) and cpu-<date>-peers.svg (the ratios).
set -euo pipefail
cd "$(dirname "$0")/.."
with_peers=0
if [ "${1:-}" = "--peers" ]; then
  with_peers=1
  shift
fi
build_dir=${1:-build}
repeat=${REPEAT:-10}
warmup=${WARMUP:-2}
planners=${PLANNERS:-none,xla,stitch}
rounds=${ROUNDS:-3}
peers=${PEERS:-torch_eager,torch_compile,jax_jit}
jemalloc_conf=${JEMALLOC_CONF-dirty_decay_ms:-1,muzzy_decay_ms:-1}
peers_venv=${PEERS_VENV:-.venv-peers}
say() { echo "bench.sh: $*"; }
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  say "ROUNDS=$rounds: give a whole number of at least 1" >&2
  exit 2
fi
results_name=${RESULTS_NAME:-cpu-$(date -u +%Y-%m-%d)}
if ! [[ $results_name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
  say "RESULTS_NAME=$results_name: give a file name of letters, digits, '.', '_' and '-'" >&2
  exit 2
fi

if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=ON -DSTITCH_ASSERTIONS=OFF >/dev/null
elif grep -q '^STITCH_ASSERTIONS:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
  # A test build (scripts/setup.sh --tests) checks the standard library's
  # preconditions; benchmarks time a build without them (docs/testing.md).
  say "$build_dir was configured for tests (_GLIBCXX_ASSERTIONS); reconfiguring it without them"
  cmake -S . -B "$build_dir" -DSTITCH_ASSERTIONS=OFF >/dev/null
fi
targets=(stitch)
if ninja -C "$build_dir" -t targets all 2>/dev/null | grep -q '^stitch_bench_reference:'; then
  targets+=(stitch_bench_reference)
fi
ninja -C "$build_dir" "${targets[@]}"

mkdir -p bench/results
json=bench/results/$results_name.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Every series times this copy: a rebuild of the build directory during the run
# (minutes with --peers) changes nothing.
stitch=$scratch/stitch
cp "$build_dir/stitch" "$stitch"

# The graphs: the corpus, with --peers the sweep points too, or those WORKLOADS names.
files=(bench/workloads/*.stitch)
if ((with_peers)); then
  python3 bench/peers/sweeps.py "$scratch/sweeps" >/dev/null
  files+=("$scratch"/sweeps/*.stitch)
fi
if [ -n "${WORKLOADS:-}" ]; then
  chosen=()
  for name in $WORKLOADS; do
    match=""
    for f in "${files[@]}"; do
      [ "$(basename "$f" .stitch)" = "$name" ] && match=$f
    done
    if [ -z "$match" ]; then
      say "WORKLOADS: no $name.stitch in bench/workloads (nor, with --peers, in the sweeps)" >&2
      exit 2
    fi
    chosen+=("$match")
  done
  files=("${chosen[@]}")
fi

stitch_bench() {  # OUT.json [stitch bench options]
  local out=$1
  shift
  "$stitch" bench "${files[@]}" --backend cpu --repeat "$repeat" --warmup "$warmup" --json "$out" "$@"
}

# The peers: the virtual environment (created when missing) and jemalloc.
peers_python=""
jemalloc=""
skipped=""
if ((with_peers)); then
  if bash scripts/peers-venv.sh "$peers_venv"; then
    peers_python=$peers_venv/bin/python
  else
    skipped="scripts/peers-venv.sh could not set up $peers_venv (torch and jax from PyPI)"
  fi
  jemalloc=$(dpkg -L libjemalloc2 2>/dev/null | grep '/libjemalloc\.so\.2$' | head -n 1 || true)
  [ -n "$jemalloc" ] || say "no libjemalloc2: no jemalloc series"
fi
if [ -n "${WORKLOADS:-}" ]; then
  peer_graphs=(--only "$(echo $WORKLOADS | tr ' ' ',')")
else
  peer_graphs=(--workloads bench/workloads --sweeps)
fi

# The peers that THP_MEM_ALLOC_ENABLE changes: torch's CPU allocator reads it.
torch_peers=$(echo "$peers" | tr ',' '\n' | grep '^torch' | paste -sd, - || true)

run_peers() {  # OUT.json [run_peers.py options]; a failed run keeps what it wrote
  local out=$1
  shift
  # On the CPU one call per sample, as stitch bench and torch time; the first warm-up call compiles.
  if ! "$peers_python" bench/peers/run_peers.py --device cpu --peers "${RUN_PEERS:-$peers}" "${peer_graphs[@]}" \
    --repeat "$repeat" --warmup "$((warmup > 0 ? warmup : 1))" --jax-batch 1 --json "$out" "$@"; then
    if [ -s "$out" ]; then
      say "warning: run_peers.py failed; keeping the rows it wrote"
    else
      say "warning: run_peers.py failed and wrote nothing"
    fi
  fi
}

if ((with_peers)); then
  for ((r = 1; r <= rounds; r++)); do
    say "round $r of $rounds: stitch bench (outputs reused)"
    stitch_bench "$scratch/stitch-reused-$r.json" --planners "$planners"
    say "round $r of $rounds: stitch bench --fresh-outputs"
    stitch_bench "$scratch/stitch-fresh-$r.json" --planners stitch --fresh-outputs
    if [ -n "$jemalloc" ]; then
      say "round $r of $rounds: stitch bench under jemalloc"
      LD_PRELOAD=$jemalloc MALLOC_CONF=$jemalloc_conf stitch_bench "$scratch/stitch-jemalloc-$r.json" --planners stitch
    fi
    if [ -n "$peers_python" ]; then
      check=()
      ((r > 1)) || check=(--check --stitch "$stitch")
      say "round $r of $rounds: peers${check:+ (numpy float64 check first)}"
      run_peers "$scratch/peers-default-$r.json" "${check[@]}"
      if [ -n "$torch_peers" ]; then
        say "round $r of $rounds: torch peers with huge pages (THP_MEM_ALLOC_ENABLE=1)"
        THP_MEM_ALLOC_ENABLE=1 RUN_PEERS=$torch_peers run_peers "$scratch/peers-thp-$r.json"
      fi
      if [ -n "$jemalloc" ]; then
        say "round $r of $rounds: peers under jemalloc"
        LD_PRELOAD=$jemalloc MALLOC_CONF=$jemalloc_conf run_peers "$scratch/peers-jemalloc-$r.json"
      fi
    fi
  done
else
  stitch_bench "$scratch/stitch-reused-1.json" --planners "$planners"
fi
# Each reused row's time: the median over the rounds.
python3 bench/peers/combine_cpu.py median "$scratch/stitch.json" "$scratch"/stitch-reused-*.json

reference=$(find "$build_dir" -name stitch_bench_reference -type f -perm -u+x 2>/dev/null | head -n 1)
if [ -n "$reference" ]; then
  echo "== $reference --repeat $repeat"
  if ! "$reference" --repeat "$repeat" >"$scratch/reference.json"; then
    echo "bench.sh: $reference failed; the results have no reference rows" >&2
    rm -f "$scratch/reference.json"
  fi
else
  echo "bench.sh: no stitch_bench_reference in $build_dir; the results have no reference rows"
fi

# Reference rows join the results as planner "reference", their fraction of
# copy taken against the copy stitch bench measured on the same workload.
python3 - "$scratch/stitch.json" "$scratch/reference.json" "$json" <<'PY'
import json, os, sys
stitch_path, reference_path, out_path = sys.argv[1:]
doc = json.load(open(stitch_path))
if os.path.exists(reference_path):
    reference = json.load(open(reference_path))
    copy = {r["workload"]: r["copy_gbps"] for r in doc["results"] if "copy_gbps" in r}
    for r in reference.get("results", []):
        if r.get("variant") != "reference" or r.get("workload") not in copy:
            continue
        doc["results"].append({
            "workload": r["workload"], "planner": "reference", "kernels": None,
            "bytes_min": r["bytes_min"], "median_s": r["median_s"], "gbps": r["gbps"],
            "fraction_of_copy": r["gbps"] / copy[r["workload"]], "copy_gbps": copy[r["workload"]],
            "source": "stitch_bench_reference"})
    doc["reference_run"] = reference
json.dump(doc, open(out_path, "w"), indent=2)
open(out_path, "a").write("\n")
PY
python3 scripts/plot_bench.py "$json" -o "bench/results/$results_name.svg"
if ((with_peers)); then
  [ -z "$skipped" ] || say "peers skipped: $skipped"
  shopt -s nullglob
  python3 bench/peers/combine_cpu.py table --results "$json" --out "bench/results/$results_name" \
    --stitch-fresh "$scratch"/stitch-fresh-*.json --stitch-jemalloc "$scratch"/stitch-jemalloc-*.json \
    --peers-default "$scratch"/peers-default-*.json --peers-thp "$scratch"/peers-thp-*.json \
    --peers-jemalloc "$scratch"/peers-jemalloc-*.json \
    --jemalloc "${jemalloc:+$jemalloc with MALLOC_CONF=$jemalloc_conf}" --skipped "$skipped"
  shopt -u nullglob
  say "wrote bench/results/$results_name.md and $results_name-peers.svg"
fi
say "wrote $json"
