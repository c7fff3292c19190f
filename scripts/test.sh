#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite (CTest; the Python tests against
# the wheel, installed into a fresh venv: scripts/wheel-test.sh), then a bounded
# fuzzing run of each libFuzzer target: 24 s each, under three minutes for the
# six (docs/fuzzing.md, In the test command), then the sanitizers' short form:
# the ir, tensor and interp unit tests and the planners' model-scale tests under
# clang's ASan and UBSan.
#
#   scripts/test.sh --sanitize [LABEL_REGEX]
# instead runs the sanitizers' long form: it builds the library, the CLI and
# the tests with ASan and UBSan (-DSTITCH_SANITIZE=ON, in build-sanitize;
# generated CPU kernels are compiled with the same sanitizers) and runs the
# suites under them: by default the labels ir, tensor, interp, kir, fusion,
# lower, ptx, runtime, codegen and e2e (docs/testing.md, Sanitizers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --sanitize ]; then
  labels=${2:-'^(ir|kernel_lang|tensor|interp|kir|fusion|lower|ptx|runtime|codegen|e2e)$'}
  scripts/setup.sh --tests --packages-only
  cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTITCH_WERROR=ON -DSTITCH_SANITIZE=ON >/dev/null
  ninja -C build-sanitize stitch test_ir test_kernel_lang test_tensor test_interp test_kir test_fusion test_lower test_ptx test_runtime \
    test_codegen test_e2e
  # OpenMP's runtime leaks by design at exit; everything else is reported.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" -L "$labels" -LE cuda_sim
  exit 0
fi
scripts/setup.sh --tests --python build
# The Python tests (label python) run once, against the installed wheel below.
ctest --test-dir build --output-on-failure -j "$(nproc)" -LE '^python$'
# The pip route (docs/python.md, The wheel in CI): the wheel from this build's
# objects, installed into a fresh venv with numpy 2, tests/python against it.
scripts/wheel-test.sh build
scripts/fuzz.sh 24
# The sanitizers' short form (docs/testing.md, Sanitizers): the ir, kernel language,
# tensor and interp unit tests and the planners' model-scale and fusion-DAG tests,
# built with clang's ASan and UBSan on the fuzz targets' sanitized objects.
ninja -C build-fuzz sanitized_test_ir sanitized_test_kernel_lang sanitized_test_tensor sanitized_test_interp \
  sanitized_test_planners
for module in ir kernel_lang tensor interp planners; do
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/fuzz/sanitized_test_$module" --gtest_brief=1
done
