#!/usr/bin/env bash
# The GPU check (issue 6; docs/gpu-check.md): on a machine with an NVIDIA GPU and
# the CUDA toolkit, and no internet, prints the machine's facts, builds Stitch,
# runs the `gpu` tests and the GPU benchmarks, and writes the results files.
#   scripts/gpu-check.sh [--steps LIST] [build-dir]     (default: build-gpu)
#   scripts/gpu-check.sh --env [build-dir]              (print the bundle's exports)
# LIST is a comma-separated subset of facts,build,test,bench (default: all), so a
# time-limited session can build in one call and test/bench in the next; the
# dependencies are set up in every call.
#
# Dependencies: the system's when scripts/setup.sh's packages are installed;
# otherwise the .deb files that scripts/gpu-deps.sh downloaded into
# .gpu-deps/debs, unpacked into .gpu-deps/root (never into /) and found there
# through CMAKE_PREFIX_PATH, pkg-config, LIBRARY_PATH and LD_LIBRARY_PATH.
# Environment:
#   GPU_CHECK_FORCE_BUNDLE=1  use the bundle even where the system has the packages,
#                             and make CMake and pkg-config ignore the system copies
#   GPU_CHECK_JOBS=N          build parallelism (default: nproc)
#   GPU_CHECK_LABEL=REGEX     CTest label regex (default: ^gpu$)
#   GPU_CHECK_TEST_JOBS=N     ctest -j (default 4; the tests share the one GPU)
#   GPU_CHECK_TARGETS="a b"   build only these targets (default: everything)
#   GPU_CHECK_MODEL_TARGET=T  the GPU model's target whose committed predictions the
#                             measurements are put beside (default: h200)
#   GPU_CHECK_NCU=0           skip the hardware counters (scripts/gpu-ncu.sh: ncu over a
#                             few stitch kernels, beside the model; run when ncu exists)
#   REPEAT, WARMUP, PLANNERS, PEERS, ROW_SCHEDULES, MODELS, TUNE   passed on to scripts/gpu-bench.sh
#   OUT                       when set (the device tool's output folder), the
#                             summary, logs and results are copied there (8 files)
# Exit status: nonzero when the build, the tests or `stitch bench` failed (a
# failing peer or chart is a warning); the benchmarks still run after failed
# tests when the build succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

steps=facts,build,test,bench
print_env=0
while (($#)); do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --steps=*) steps=${1#--steps=}; shift ;;
    --env) print_env=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
build_dir=${1:-build-gpu}
mkdir -p "$build_dir"
build_dir=$(cd "$build_dir" && pwd)
logs=$build_dir/gpu-check
mkdir -p "$logs"
summary=$logs/summary.txt
has_step() { [[ ",$steps," == *",$1,"* ]]; }

bundle_debs=$repo/.gpu-deps/debs
bundle_root=$repo/.gpu-deps/root
multiarch=x86_64-linux-gnu
force_bundle=${GPU_CHECK_FORCE_BUNDLE:-0}

say() { echo "gpu-check: $*" | tee -a "$summary"; }
section() { printf '\n== %s\n' "$*" | tee -a "$summary"; }

if ((!print_env)); then
  if has_step facts || has_step build; then : >"$summary"; fi
  say "$(date -u +%Y-%m-%dT%H:%M:%SZ) steps=$steps build=$build_dir"
fi

# ---------------------------------------------------------------- facts
machine_facts() {
  section "machine"
  {
    echo "\$ uname -a"; uname -a
    echo "\$ cat /etc/os-release"; cat /etc/os-release 2>/dev/null || echo "(no /etc/os-release)"
    echo "\$ nproc"; nproc
    echo "\$ nvidia-smi"; nvidia-smi 2>&1 || echo "(nvidia-smi failed or is absent)"
    echo "\$ nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm,clocks.max.mem --format=csv"
    nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,clocks.max.sm,clocks.max.mem --format=csv 2>&1 || true
    echo "\$ nvcc --version"; "${nvcc:-nvcc}" --version 2>&1 || echo "(no nvcc)"
    echo "\$ g++ --version"; g++ --version 2>&1 || echo "(no g++)"
    echo "\$ c++ --version"; c++ --version 2>&1 | head -n 1 || echo "(no c++)"
    echo "\$ cmake --version"; cmake --version 2>&1 | head -n 1 || echo "(no cmake)"
    echo "\$ ninja --version"; ninja --version 2>&1 || echo "(no ninja)"
    echo "\$ pkg-config --version"; pkg-config --version 2>&1 || echo "(no pkg-config on PATH)"
    echo "\$ python3 --version"; python3 --version 2>&1 || echo "(no python3)"
    echo "\$ python3: torch, triton, jax, numpy, matplotlib, onnx"
    python3 - <<'PY' 2>&1 || true
import importlib
for name in ("torch", "triton", "jax", "numpy", "matplotlib", "onnx"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" cuda={m.version.cuda} available={m.cuda.is_available()}"
        print(f"{name} {getattr(m, '__version__', '?')}{extra}")
    except Exception as e:  # a missing peer is reported, not fatal
        print(f"{name}: not importable ({type(e).__name__}: {e})")
PY
    echo "\$ /usr/bin/python3 (the interpreter tests/onnx_node and tests/bert name): numpy, onnx, torch"
    /usr/bin/python3 -c 'import numpy, onnx, torch; print("numpy, onnx and torch import")' 2>&1 | tail -n 1 || true
    echo "\$ git rev-parse HEAD"; git -C "$repo" rev-parse HEAD 2>/dev/null || echo "(not a git checkout)"
  } 2>&1 | tee -a "$summary"
}

# The CUDA toolkit: nvcc on PATH, else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda.
nvcc=$(command -v nvcc || true)
cuda_root=""
if [ -n "$nvcc" ]; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
else
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then
      cuda_root=$d
      nvcc=$d/bin/nvcc
      export PATH=$d/bin:$PATH
      break
    fi
  done
fi

# ---------------------------------------------------------------- deps
# scripts/setup.sh's packages that the build and the tests need (not the
# compiler, cmake, ninja, nor the fuzzers' clang).
required_packages() {
  sed -n '/^packages=(/,/^)/p' scripts/setup.sh | sed 's/packages=(//; s/)//; s/#.*//' | tr -s ' \t' '\n' \
    | sed '/^$/d' | grep -vxE 'cmake|ninja-build|g\+\+|clang|libclang-rt-dev|googletest'
}
system_has_packages() {
  command -v dpkg-query >/dev/null || return 1
  local p
  for p in $(required_packages); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 1
  done
}

# Unpacks every .deb of the bundle into $bundle_root (again when the set of
# .deb files or the root's path changed), then makes the tree self-consistent.
unpack_bundle() {
  local stamp=$bundle_root/.unpacked want
  want=$( (echo "$bundle_root"; cd "$bundle_debs" && ls -l -- *.deb) | cksum)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    say "bundle: $bundle_root is up to date"
    return
  fi
  rm -rf "$bundle_root"
  mkdir -p "$bundle_root"
  local deb n=0
  for deb in "$bundle_debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$bundle_root"
    else
      # No dpkg: a .deb is an ar archive holding data.tar.{xz,zst,gz}.
      local tmp
      tmp=$(mktemp -d)
      (cd "$tmp" && ar x "$deb")
      local data
      data=$(ls "$tmp"/data.tar.* | head -n 1)
      case $data in
        *.zst) zstd -dc "$data" | tar -x -C "$bundle_root" ;;
        *) tar -xf "$data" -C "$bundle_root" ;;
      esac
      rm -rf "$tmp"
    fi
    n=$((n + 1))
  done
  say "bundle: unpacked $n .deb files into $bundle_root"

  # Absolute symlinks (libz.so -> /lib/.../libz.so.1.2.13) point into /: into
  # the bundle when it has the target, else to the system's library of the same
  # soname (zlib1g is on every base system, maybe another version).
  local link target fixed
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    fixed=""
    if [ -e "$bundle_root$target" ]; then
      fixed=$bundle_root$target
    elif [ -e "$target" ]; then
      continue
    else
      local soname_path=${target%%.so.*}.so.
      local rest=${target#*.so.}
      soname_path=$soname_path${rest%%.*}
      for cand in "$soname_path" "/usr$soname_path" "${soname_path#/usr}"; do
        [ -e "$cand" ] && { fixed=$cand; break; }
      done
    fi
    if [ -n "$fixed" ]; then
      ln -sfn "$fixed" "$link"
    else
      say "bundle: warning: $link -> $target points nowhere on this machine"
    fi
  done < <(find "$bundle_root" -type l -lname '/*' -print0)

  # pkg-config files name prefix=/usr: rewritten in place (they are our copies).
  local pc
  while IFS= read -r -d '' pc; do
    sed -i -E "s#(=|-I|-L)/usr/#\1$bundle_root/usr/#g; s#^(prefix|exec_prefix)=/usr\$#\1=$bundle_root/usr#" "$pc"
  done < <(find "$bundle_root" -name '*.pc' -type f -print0)
  echo "$want" >"$stamp"
}

# Exports that make the bundle visible to CMake, pkg-config, the compiler
# (including the one that compiles generated CPU kernels at run time, which
# links -lsleefgnuabi: LIBRARY_PATH) and the loader (LD_LIBRARY_PATH).
bundle_env() {
  local r=$bundle_root/usr lib=$bundle_root/usr/lib/$multiarch
  local pcdirs
  pcdirs=$(find "$bundle_root" -name '*.pc' -type f -printf '%h\n' | sort -u | paste -sd:)
  cat <<EOF
export GPU_CHECK_BUNDLE_ROOT='$bundle_root'
export CMAKE_PREFIX_PATH='$r'\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}
export PKG_CONFIG_LIBDIR='$pcdirs'
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
export LIBRARY_PATH='$lib:$lib/openblas-pthread'\${LIBRARY_PATH:+:\$LIBRARY_PATH}
export LD_LIBRARY_PATH='$lib:$lib/openblas-pthread:$r/lib'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
EOF
  if ((force_bundle)) || ! command -v pkg-config >/dev/null; then
    echo "export PKG_CONFIG='$r/bin/pkgconf'"
  fi
}

mode=""
choose_mode() {
  if ((force_bundle)); then
    mode=bundle
  elif system_has_packages; then
    mode=system
  elif [ -d "$bundle_debs" ] && compgen -G "$bundle_debs/*.deb" >/dev/null; then
    mode=bundle
  else
    mode=system
    say "warning: scripts/setup.sh's packages are not all installed and there is no .gpu-deps/debs"
    say "         (run scripts/setup.sh, or scripts/gpu-deps.sh on a connected Debian machine and carry .gpu-deps/debs)"
  fi
}

choose_mode
if ((print_env)); then
  if [ "$mode" != bundle ]; then
    echo "# gpu-check: the system's packages are used; nothing to export"
    exit 0
  fi
  unpack_bundle >/dev/null
  bundle_env
  exit 0
fi

if has_step facts; then machine_facts; fi

if [ "$mode" = bundle ]; then
  if ((force_bundle)); then
    section "dependencies: the bundle in .gpu-deps (GPU_CHECK_FORCE_BUNDLE=1: the system copies are ignored)"
  else
    section "dependencies: the bundle in .gpu-deps"
  fi
  [ -f "$bundle_debs/MANIFEST" ] && sed 's/^/  /' "$bundle_debs/MANIFEST" | tee -a "$summary" >/dev/null
  unpack_bundle
  bundle_env >"$build_dir/gpu-check.env"
else
  section "dependencies: the system's packages"
  rm -f "$build_dir/gpu-check.env"
fi
# scripts/gpu-bench.sh sources the same file, so the two agree.
if [ -f "$build_dir/gpu-check.env" ]; then
  # shellcheck disable=SC1091
  . "$build_dir/gpu-check.env"
  sed 's/^/  /' "$build_dir/gpu-check.env" | tee -a "$summary"
fi
# Kernels compiled during the check stay with the build, not in ~/.cache.
export STITCH_CACHE_DIR=${STITCH_CACHE_DIR:-$build_dir/kernel-cache}
# The ONNX node cases that scripts/gpu-deps.sh generated with Debian's onnx 1.12
# (the GPU machine's onnx may be one whose generate-data writes no node cases).
if [ -f "$repo/.gpu-deps/onnx-node-cases.tgz" ] && [ -z "${STITCH_ONNX_NODE_CASES:-}" ]; then
  export STITCH_ONNX_NODE_CASES=$repo/.gpu-deps/onnx-node-cases.tgz
  say "ONNX node cases: $STITCH_ONNX_NODE_CASES"
fi

# ---------------------------------------------------------------- results to $OUT
copy_results() {
  [ -n "${OUT:-}" ] || return 0
  mkdir -p "$OUT"
  local date
  date=$(date -u +%Y-%m-%d)
  # At most 8 files come back: the build log only when the build failed.
  local candidates=("$summary")
  ((built)) || candidates+=("$logs/build.log")
  candidates+=(
    "$logs/ctest.log" "$logs/bench.log"
    "bench/results/gpu-$date-stitch.json" "bench/results/gpu-$date-pyfuser.json" "bench/results/gpu-$date-peers.json"
    "bench/results/gpu-$date-rows.json"
    "bench/results/gpu-$date-models.json" "bench/results/gpu-$date-tune.json"
    # Made again from the two above by bench/peers/combine.py when they do not fit.
    "bench/results/gpu-$date.md" "bench/results/gpu-$date.json" "bench/results/gpu-$date.svg"
    # Made again from the committed predictions and the stitch results by beside.py.
    "$logs/model.md"
  )
  local f n=0
  for f in "${candidates[@]}"; do
    ((n < 8)) || break
    [ -f "$f" ] || continue
    # Results are committed: the machine's paths become <bundle> and <repo>.
    sed -e "s|$bundle_root|<bundle>|g" -e "s|$repo|<repo>|g" -e "s|$OUT|\$OUT|g" "$f" >"$OUT/$(basename "$f")"
    n=$((n + 1))
  done
}
trap copy_results EXIT

status=0
built=0
elapsed() { echo "$((SECONDS - $1))s"; }

# ---------------------------------------------------------------- build
if has_step build; then
  section "build ($build_dir)"
  cmake_args=(-S "$repo" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=OFF
              -DSTITCH_BUILD_FUZZERS=OFF -DSTITCH_BUILD_TESTS=ON)
  command -v ninja >/dev/null && cmake_args+=(-G Ninja)
  # The ONNX node suite's cases come from the onnx package: the venv's python3
  # holds it on the GPU machine, not /usr/bin/python3 (tests/onnx_node).
  if python3 -c "import onnx" >/dev/null 2>&1; then
    cmake_args+=("-DSTITCH_ONNX_PYTHON=$(command -v python3)")
  fi
  # CMake 4 refuses packages whose files ask for policies older than 3.5 (the
  # bundle's ask for ranges up to 3.19-3.23, which it accepts; this is a safety net).
  cmake_major=$(cmake --version | sed -n 's/^cmake version \([0-9]*\).*/\1/p')
  ((${cmake_major:-3} >= 4)) && cmake_args+=(-DCMAKE_POLICY_VERSION_MINIMUM=3.5)
  if [ -n "$cuda_root" ]; then
    cmake_args+=("-DCUDAToolkit_ROOT=$cuda_root")
    say "CUDA toolkit: $cuda_root ($nvcc)"
  else
    say "error: no CUDA toolkit (no nvcc on PATH, in \$CUDA_HOME, \$CUDA_PATH or /usr/local/cuda)"
    status=1
  fi
  if [ "$mode" = bundle ]; then
    cmake_args+=("-DCMAKE_PREFIX_PATH=$bundle_root/usr")
    [ -n "${PKG_CONFIG:-}" ] && cmake_args+=("-DPKG_CONFIG_EXECUTABLE=$PKG_CONFIG")
    if ((force_bundle)); then
      # The system copies must not be found: /usr (and / for merged-/usr
      # systems, where /lib is /usr/lib) are not search prefixes. The compiler
      # is named so that ignoring /usr does not hide it.
      cmake_args+=("-DCMAKE_IGNORE_PREFIX_PATH=/usr;/"
                   "-DCMAKE_CXX_COMPILER=$(command -v c++)" "-DCMAKE_C_COMPILER=$(command -v cc)")
    fi
  fi
  # A build directory configured for the other dependency mode starts afresh.
  if [ -f "$build_dir/CMakeCache.txt" ] && [ "$(cat "$build_dir/gpu-check.mode" 2>/dev/null)" != "$mode:$force_bundle" ]; then
    say "the build directory was configured for another dependency mode: reconfiguring from scratch"
    rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
  fi
  echo "$mode:$force_bundle" >"$build_dir/gpu-check.mode"
  t=$SECONDS
  {
    echo "\$ cmake ${cmake_args[*]}"
    cmake "${cmake_args[@]}"
  } >"$logs/build.log" 2>&1 && configured=1 || configured=0
  if ((!configured)); then
    tail -n 40 "$logs/build.log"
    say "FAILED: CMake configuration ($logs/build.log)"
    exit 1
  fi
  grep -E 'CUDA toolkit not found' "$logs/build.log" | tee -a "$summary" || true
  # Where each dependency was found (CMakeCache.txt).
  grep -E '^(fmt_DIR|CLI11_DIR|nlohmann_json_DIR|GTest_DIR|ONNX_DIR|Protobuf_INCLUDE_DIR|Protobuf_LIBRARY(_RELEASE)?|pkgcfg_lib_OPENBLAS_openblas|OPENBLAS_INCLUDEDIR|STITCH_SLEEF_GNUABI|CUDAToolkit_NVCC_EXECUTABLE|CUDA_nvrtc_LIBRARY|CMAKE_CXX_COMPILER|PKG_CONFIG_EXECUTABLE):' \
    "$build_dir/CMakeCache.txt" | sed 's/^/  /' | tee -a "$summary"
  jobs=${GPU_CHECK_JOBS:-$(nproc)}
  targets=()
  for target in ${GPU_CHECK_TARGETS:-}; do targets+=(--target "$target"); done
  echo "\$ cmake --build $build_dir -j $jobs ${targets[*]}" >>"$logs/build.log"
  # Ninja keeps going after a failed step (-k 0), so one build log names every error.
  keep_going=()
  grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build_dir/CMakeCache.txt" && keep_going=(-- -k 0)
  if cmake --build "$build_dir" -j "$jobs" "${targets[@]}" "${keep_going[@]}" >>"$logs/build.log" 2>&1; then
    built=1
    say "build: OK in $(elapsed "$t") (log $logs/build.log)"
  else
    tail -n 60 "$logs/build.log"
    say "FAILED: build, after $(elapsed "$t") ($logs/build.log); no tests or benchmarks"
    exit 1
  fi
elif [ -x "$build_dir/stitch" ]; then
  built=1
fi
copy_results

# ---------------------------------------------------------------- test
if has_step test; then
  # A regular expression to CTest: anchored, or `gpu` would also take the
  # CPU-only gpu_model tests (1.7 minutes of the lease on 2026-12-04).
  label=${GPU_CHECK_LABEL:-^gpu\$}
  section "tests (ctest -L $label)"
  count=$(ctest --test-dir "$build_dir" -N -L "$label" 2>/dev/null | sed -n 's/^Total Tests: //p')
  if [ "${count:-0}" = 0 ] && [ -z "${GPU_CHECK_LABEL:-}" ]; then
    say "warning: no test is labelled '$label'; running the CUDA modules' tests (label regex 'cuda') instead"
    label=cuda
    count=$(ctest --test-dir "$build_dir" -N -L "$label" 2>/dev/null | sed -n 's/^Total Tests: //p')
  fi
  t=$SECONDS
  test_jobs=${GPU_CHECK_TEST_JOBS:-4}
  if ctest --test-dir "$build_dir" -L "$label" --no-tests=error --output-on-failure -j "$test_jobs" --timeout 300 \
    >"$logs/ctest.log" 2>&1; then
    say "tests: ${count:-?} labelled '$label' passed in $(elapsed "$t") (log $logs/ctest.log)"
  else
    status=1
    tail -n 40 "$logs/ctest.log"
    say "FAILED: tests labelled '$label' ($logs/ctest.log)"
  fi
  # The CLI end to end on the GPU (tests/e2e, label e2e: run and check --backend cuda).
  if ctest --test-dir "$build_dir" -R '^CliCuda\.' --output-on-failure >>"$logs/ctest.log" 2>&1; then
    say "tests: stitch run/check --backend cuda end to end passed"
  else
    status=1
    say "FAILED: CliCuda (stitch run/check --backend cuda; $logs/ctest.log)"
  fi
  grep -E '^[0-9]+% tests passed|tests failed out of|^The following tests FAILED' "$logs/ctest.log" | tee -a "$summary" || true
  skipped=$(grep -c '\*\*\*Skipped' "$logs/ctest.log" || true)
  if ((skipped > 0)); then
    say "note: $skipped tests were skipped (no usable GPU or driver, as seen by the tests):"
    grep '\*\*\*Skipped' "$logs/ctest.log" | sed 's/^/  /' | head -n 20 | tee -a "$summary"
  fi
fi
copy_results

# ---------------------------------------------------------------- bench
if has_step bench; then
  section "benchmarks (scripts/gpu-bench.sh)"
  if ((!built)); then
    say "FAILED: no built stitch in $build_dir; no benchmarks"
    status=1
  else
    ((status == 0)) || say "the build succeeded but something above failed; running the benchmarks anyway"
    t=$SECONDS
    bench_status=0
    scripts/gpu-bench.sh "$build_dir" 2>&1 | tee "$logs/bench.log" || bench_status=$?
    if ((bench_status == 0)); then
      say "benchmarks: OK in $(elapsed "$t")"
    elif ((bench_status == 3)); then
      say "warning: benchmarks ran in $(elapsed "$t") and the stitch numbers are written, but the sweeps, peers or combination failed ($logs/bench.log)"
    else
      status=1
      say "FAILED: benchmarks ($logs/bench.log)"
    fi
    grep -E '^gpu-bench: (wrote|kept|warning|FAILED)' "$logs/bench.log" | tee -a "$summary" || true
  fi
fi

# ---------------------------------------------------------------- the model beside
# The GPU model's predictions for this commit, committed before the run
# (scripts/gpu-predict.sh), beside what the benchmarks measured (docs/gpu-model.md,
# Predictions before a GPU run); the joined table in $logs/model.md.
if has_step bench && [ -f "bench/results/gpu-$(date -u +%Y-%m-%d)-stitch.json" ]; then
  section "measured beside predicted (bench/gpu_model/beside.py)"
  python3 bench/gpu_model/beside.py --results bench/results --date "$(date -u +%Y-%m-%d)" \
    --target "${GPU_CHECK_MODEL_TARGET:-h200}" --commit "$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    --md "$logs/model.md" 2>&1 | tee -a "$summary" || say "warning: bench/gpu_model/beside.py failed"
fi

# ---------------------------------------------------------------- hardware counters
# Nsight Compute's counters for a few stitch kernels beside the model's predictions
# (docs/gpu-model.md, Hardware counters beside the model); no ncu, or a failing one,
# is a warning. Files in $logs/ncu.
if has_step bench && ((built)) && [ "${GPU_CHECK_NCU:-1}" != 0 ]; then
  section "hardware counters beside the model (scripts/gpu-ncu.sh)"
  scripts/gpu-ncu.sh "$build_dir" "$logs/ncu" 2>&1 | tee -a "$summary" || say "warning: scripts/gpu-ncu.sh failed"
fi

section "results"
say "summary: $summary"
say "logs:    $logs/{build,ctest,bench}.log"
ls -1 bench/results/gpu-* 2>/dev/null | sed 's/^/  /' | tee -a "$summary" || true
copy_results
[ -n "${OUT:-}" ] && say "copied the summary, logs and results to \$OUT ($OUT)"
if ((status == 0)); then say "GPU check ($steps): PASSED"; else say "GPU check ($steps): FAILED (see above)"; fi
exit "$status"
