#!/usr/bin/env bash
# The pip route, checked (docs/python.md, The wheel in CI): builds the wheel from
# the test build's objects (pip wheel --no-build-isolation into build-dir=<build>,
# with the test build's own settings, so only the install step runs), installs it
# into a fresh venv (numpy 2 from the wheel's requirement, torch for the backend's
# tests) and runs tests/python against the installed copy, from a directory where
# neither the source tree nor the build is on the path.
#   scripts/wheel-test.sh [build-dir]      (default: build; after setup.sh --tests --python)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
build_dir=${1:-build}
wheel_dir="$build_dir/wheel"
venv="$build_dir/wheel-venv"
start=$SECONDS
rm -rf "$wheel_dir" "$venv"
mapfile -t settings < <(scripts/pip-build-settings.sh "$build_dir")
.venv/bin/python -m pip wheel . -q --no-build-isolation --no-deps -w "$wheel_dir" "${settings[@]}"
built=$SECONDS
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q "$wheel_dir"/*.whl "torch>=2.1"
installed=$SECONDS
cd "$venv"
bin/python - <<'PY'
import importlib.metadata as md, os, numpy, stitch
assert numpy.__version__.split(".")[0] == "2", numpy.__version__
assert stitch.__file__.startswith(os.getcwd()), stitch.__file__
names = [e.name for e in md.entry_points(group="torch_dynamo_backends")]
assert "stitch" in names, names
print(f"wheel-test: stitch {stitch.__version__} from {os.path.dirname(stitch.__file__)}, numpy {numpy.__version__}")
PY
# The simulated CUDA driver of this build (docs/cuda-sim.md): the by-address CUDA
# route's test runs on it.
STITCH_SOURCE_DIR="$repo" STITCH_CUDA_SIM_DRIVER="$(cd "$repo" && realpath "$build_dir")/libstitch_cuda_sim.so" \
  bin/python -m unittest discover -s "$repo/tests/python" -p "test_*.py"
echo "wheel-test: wheel $((built - start)) s, venv $((installed - built)) s, tests $((SECONDS - installed)) s"
