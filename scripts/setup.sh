#!/usr/bin/env bash
# Installs what Stitch needs from Debian's packages (only what is missing),
# then configures and builds. Idempotent: a second run installs nothing.
#   scripts/setup.sh [--tests] [build-dir]       (default: build)
# --tests also installs what only the test suite needs: python3-onnx (the ONNX
# backend node tests' definitions) and python3-torch (the BERT-block export).
set -euo pipefail
cd "$(dirname "$0")/.."
with_tests=0
if [ "${1:-}" = "--tests" ]; then
  with_tests=1
  shift
fi
build_dir=${1:-build}

# Why each package is here: docs/dependencies.md.
packages=(
  cmake ninja-build g++ pkg-config
  libfmt-dev libcli11-dev nlohmann-json3-dev
  googletest libgtest-dev libgmock-dev
  clang libclang-rt-dev
  libopenblas-dev libsleef-dev
  libonnx-dev libprotobuf-dev
  coinor-libcbc-dev
  libjemalloc-dev
)
if ((with_tests)); then
  packages+=(python3-numpy python3-onnx python3-torch)
fi

bash scripts/apt-install-missing.sh "${packages[@]}"

cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=ON >/dev/null
ninja -C "$build_dir"
