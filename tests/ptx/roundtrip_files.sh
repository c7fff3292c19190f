#!/usr/bin/env bash
# Round-trips PTX files through the printer and ptxas (docs/ptx.md, Tests):
# `stitch ptx print` must accept each file, print a fixed point, and ptxas must
# accept the printed text for the architecture the file's `.target` names.
# Files are checked nproc at a time; each failure is named. Fails when a file
# fails or when there are no files at all.
#
#   roundtrip_files.sh STITCH PTXAS FILE.ptx...
set -euo pipefail
stitch=$1 ptxas=$2
shift 2
if [ "$#" -eq 0 ]; then
  echo "roundtrip_files.sh: no PTX files to check" >&2
  exit 1
fi

check_one() {
  local stitch=$1 ptxas=$2 ptx=$3
  local arch printed
  arch=$(sed -n 's/^[[:space:]]*\.target[[:space:]]*\(sm_[0-9a-z]*\).*/\1/p' "$ptx" | head -n 1)
  printed=$(mktemp --suffix=.ptx)
  trap 'rm -f "$printed"' RETURN
  if [ -z "$arch" ]; then
    echo "FAIL no .target: $ptx"; return
  fi
  if ! "$stitch" ptx print "$ptx" > "$printed"; then
    echo "FAIL parse: $ptx"; return
  fi
  if ! "$stitch" ptx print "$printed" | cmp -s - "$printed"; then
    echo "FAIL fixed point: $ptx"; return
  fi
  if ! "$ptxas" -arch="$arch" "$printed" -o /dev/null; then
    echo "FAIL ptxas -arch=$arch: $ptx"; return
  fi
  echo "PASS $ptx"
}
export -f check_one

results=$(printf '%s\0' "$@" | xargs -0 -P "$(nproc)" -n 1 bash -c 'check_one "$0" "$1" "$2"' "$stitch" "$ptxas")
passed=$(grep -c '^PASS' <<< "$results" || true)
failed=$(grep -c '^FAIL' <<< "$results" || true)
grep '^FAIL' <<< "$results" || true
echo "ptx round trip: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq "$#" ]
