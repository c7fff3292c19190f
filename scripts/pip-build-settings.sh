#!/usr/bin/env bash
# Prints pip's --config-settings that make scikit-build-core build in BUILD_DIR
# with the settings that directory was configured with (its CMakeCache.txt), so
# that `pip wheel|install --no-build-isolation` there runs the install step only
# (scripts/setup.sh --python, scripts/wheel-test.sh; docs/python.md).
#   scripts/pip-build-settings.sh BUILD_DIR
set -euo pipefail
build_dir=$1
cache="$build_dir/CMakeCache.txt"
[ -f "$cache" ] || { echo "pip-build-settings.sh: no $cache" >&2; exit 2; }
value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
echo "--config-settings=build-dir=$build_dir"
echo "--config-settings=cmake.build-type=$(value CMAKE_BUILD_TYPE)"
for option in STITCH_BUILD_TESTS STITCH_ASSERTIONS STITCH_WERROR; do
  echo "--config-settings=cmake.define.$option=$(value $option)"
done
