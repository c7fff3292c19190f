#!/usr/bin/env bash
# Installs what Stitch needs from Debian's packages (only what is missing),
# then configures and builds. Idempotent: a second run installs nothing.
#   scripts/setup.sh [--tests] [--python] [build-dir]       (default: build)
# --tests also installs what only the test suite needs: python3-onnx (the ONNX
# backend node tests' definitions) and python3-torch (the BERT-block export).
# --python also builds the stitch Python package (docs/python.md): it makes the
# repository's .venv (Debian's python3; pybind11, scikit-build-core, numpy and torch
# from PyPI), builds the extension for it, and installs the package into it with pip
# from the build's objects, so that .venv/bin/python imports stitch.
# --packages-only installs the packages and stops (scripts/test.sh --sanitize
# configures its own build).
set -euo pipefail
cd "$(dirname "$0")/.."
with_tests=0
with_python=0
packages_only=0
while (($#)); do
  case $1 in
    --tests) with_tests=1; shift ;;
    --packages-only) packages_only=1; shift ;;
    --python) with_python=1; shift ;;
    -*) echo "setup.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
build_dir=${1:-build}

# Why each package is here: docs/dependencies.md.
packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev
  clang libclang-rt-dev
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libsleef-dev
  libonnx-dev libprotobuf-dev
  coinor-libcbc-dev
  libjemalloc-dev libssl-dev libhiredis-dev
  graphviz
)
if ((with_tests)); then
  packages+=(python3-numpy python3-onnx python3-torch chromium redis-server)
fi

if ((with_python)); then
  packages+=(python3-venv python3-dev)
fi

bash scripts/apt-install-missing.sh "${packages[@]}"
((packages_only)) && exit 0

python_flags=()
if ((with_python)); then
  if [ ! -x .venv/bin/python ]; then
    /usr/bin/python3 -m venv .venv
  fi
  .venv/bin/python -m pip install -q -r python/requirements.txt
  python_flags=(-DSTITCH_BUILD_PYTHON=ON "-DPython3_EXECUTABLE=$(pwd)/.venv/bin/python"
    "-Dpybind11_DIR=$(.venv/bin/python -m pybind11 --cmakedir)")
fi

# Test builds check the standard library's preconditions (_GLIBCXX_ASSERTIONS);
# the demo's and the benchmarks' builds do not (docs/testing.md).
assertions=OFF
((with_tests)) && assertions=ON
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=ON \
  -DSTITCH_ASSERTIONS=$assertions "${python_flags[@]}" >/dev/null
ninja -C "$build_dir"

if ((with_python)); then
  # The package installed into .venv from this build's objects (pip through
  # scikit-build-core, --no-build-isolation in this build directory: the
  # install step only), as `pip install .` would; run again after a rebuild.
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  rm -rf "$site/stitch-build.pth" "$site"/stitch-*.dist-info
  mapfile -t settings < <(scripts/pip-build-settings.sh "$build_dir")
  .venv/bin/python -m pip install -q --no-build-isolation --no-deps --force-reinstall . "${settings[@]}"
  venv_python="$(pwd)/.venv/bin/python"
  (cd / && "$venv_python" -c 'import stitch') ||
    { echo "setup.sh: .venv/bin/python cannot import stitch" >&2; exit 1; }
fi
