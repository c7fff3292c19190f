#!/usr/bin/env bash
# Downloads, on a connected Debian 12 machine, the .deb files of every build and
# test dependency that a bare GPU machine (CUDA toolkit, a host g++, CMake and
# ninja, but no Debian -dev packages and no internet) lacks, into .gpu-deps/debs/
# (ignored by git). scripts/gpu-check.sh unpacks them there, never into /.
# docs/gpu-check.md has the whole procedure.
#   scripts/gpu-deps.sh            (as root, or with sudo; needs apt)
#
# The package list is scripts/setup.sh's, less what the GPU machine brings or the
# GPU check does not use: the compiler, cmake and ninja, clang and libclang-rt
# (fuzzers only; the GPU check builds without them), googletest (GoogleTest's
# sources; libgtest-dev and libgmock-dev hold the built libraries and headers).
# The closure is resolved by apt itself, as if nothing were installed, then the
# packages every Debian/Ubuntu base or every g++ installation already has are
# dropped (libc6, libstdc++6, libgcc-s1, zlib1g, libc6-dev and its own closure).
set -euo pipefail
cd "$(dirname "$0")/.."

out=.gpu-deps/debs
budget_mib=64

not_bundled=(cmake ninja-build g++ clang libclang-rt-dev googletest)
# Present on every Debian/Ubuntu base system, or installed with g++ (libc6-dev's
# closure, libgomp1 for -fopenmp).
base='^(libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl2|libnsl-dev|libtirpc3|libtirpc-dev|libtirpc-common|rpcsvc-proto|libgcc-s1|libstdc\+\+6|gcc-[0-9]+-base|libgomp1|zlib1g|libssl3|libkrb5-3|libkrb5support0|libk5crypto3|libgssapi-krb5-2|libcom-err2|libkeyutils1|googletest)$'

# setup.sh's package list (the `packages=(` block; the --tests extras are Python
# packages the GPU machine's own python3 already has).
mapfile -t listed < <(sed -n '/^packages=(/,/^)/p' scripts/setup.sh | sed 's/packages=(//; s/)//; s/#.*//' | tr -s ' \t' '\n' | sed '/^$/d')
if ((${#listed[@]} == 0)); then
  echo "gpu-deps: found no package list in scripts/setup.sh" >&2
  exit 1
fi
wanted=()
for p in "${listed[@]}"; do
  skip=0
  for n in "${not_bundled[@]}"; do [ "$p" = "$n" ] && skip=1; done
  ((skip)) || wanted+=("$p")
done
echo "gpu-deps: from scripts/setup.sh: ${wanted[*]}"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "gpu-deps: apt-get update"
$sudo apt-get update -qq

# The whole closure, resolved by apt against an empty dpkg status (as on a bare
# machine): alternatives resolve as apt would resolve them (libopenblas0-pthread).
empty_status=$(mktemp)
trap 'rm -f "$empty_status"' EXIT
mapfile -t closure < <(apt-get -s -o Dir::State::status="$empty_status" install --no-install-recommends "${wanted[@]}" \
  | awk '/^Inst /{print $2}')
if ((${#closure[@]} == 0)); then
  echo "gpu-deps: apt resolved no packages for: ${wanted[*]}" >&2
  exit 1
fi
bundle=()
dropped=()
for p in "${closure[@]}"; do
  if [[ $p =~ $base ]]; then dropped+=("$p"); else bundle+=("$p"); fi
done
echo "gpu-deps: left out (base system or toolchain): ${dropped[*]}"
echo "gpu-deps: bundling ${#bundle[@]} packages: ${bundle[*]}"

rm -rf "$out"
mkdir -p "$out"
# apt-get download writes into the current directory; as root it warns that the
# download is unsandboxed, which is harmless here.
(cd "$out" && $sudo apt-get download -qq "${bundle[@]}" 2>&1 | grep -v 'unsandboxed' || true)
for p in "${bundle[@]}"; do
  if ! compgen -G "$out/${p}_*.deb" >/dev/null; then
    echo "gpu-deps: $p was not downloaded" >&2
    exit 1
  fi
done
[ "$(id -u)" -eq 0 ] || $sudo chown -R "$(id -u):$(id -g)" "$out"

# What was bundled, and from where (scripts/gpu-check.sh prints it).
{
  echo "# scripts/gpu-deps.sh, $(date -u +%Y-%m-%dT%H:%MZ), on $(. /etc/os-release && echo "$PRETTY_NAME") $(dpkg --print-architecture)"
  for deb in "$out"/*.deb; do dpkg-deb -W --showformat='${Package} ${Version} ${Architecture}\n' "$deb"; done
} >"$out/MANIFEST"

# The GPU machine receives the working tree and the carried .gpu-deps/debs,
# 64 MiB in all.
debs_bytes=$(du -sb "$out" | cut -f1)
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r stat -c %s -- 2>/dev/null \
  | awk '{s+=$1} END {print s+0}')
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
total=$((debs_bytes + tree_bytes))
echo "gpu-deps: $out: $(ls "$out"/*.deb | wc -l) .deb files, $(mib "$debs_bytes")"
echo "gpu-deps: working tree (tracked and unignored files): $(mib "$tree_bytes")"
echo "gpu-deps: total to carry: $(mib "$total") of $budget_mib MiB"
if ((total > budget_mib * 1048576)); then
  echo "gpu-deps: over the $budget_mib MiB budget" >&2
  exit 1
fi
echo "gpu-deps: done; carry .gpu-deps/debs to the GPU machine and run scripts/gpu-check.sh there"
