#!/usr/bin/env bash
# Creates the Python virtual environment of the CPU peers (docs/benchmarks.md,
# Peers): numpy, torch and jax[cpu] from PyPI, pinned in
# bench/peers/requirements-cpu.txt, in .venv-peers/ (ignored by git); installs
# python3-venv, the Python headers (torch.compile's Inductor builds C++ against
# them) and libjemalloc2 from Debian when missing. Idempotent: a second run
# installs nothing and only checks that the packages import.
#   scripts/peers-venv.sh [venv-dir]        (default: .venv-peers)
# PEERS_TORCH_INDEX: a pip index URL to take torch from instead of PyPI (a
# CPU-only wheel index, which is far smaller than PyPI's CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv-peers}
requirements=bench/peers/requirements-cpu.txt
say() { echo "peers-venv: $*"; }

# Why each package is here: docs/dependencies.md.
packages=(python3-venv libjemalloc2)
if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  packages+=(python3-dev)
fi
bash scripts/apt-install-missing.sh "${packages[@]}"

# torch's PyPI wheel with its CUDA libraries takes several GiB.
free_mib=$(df -Pm "$(dirname "$venv")" | awk 'NR == 2 {print $4}')
if [ ! -d "$venv" ] && ((free_mib < 10240)); then
  say "FAILED: $free_mib MiB free here; the environment needs up to 10 GiB" >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  say "python3 -m venv $venv"
  python3 -m venv "$venv"
fi
py=$venv/bin/python
# A dry run succeeds offline and names nothing to install when all is there.
if dry_run=$("$py" -m pip install --disable-pip-version-check --dry-run -r "$requirements" 2>/dev/null) &&
   ! grep -q '^Would install' <<<"$dry_run"; then
  say "the packages of $requirements are installed"
else
  if [ -n "${PEERS_TORCH_INDEX:-}" ]; then
    say "torch from $PEERS_TORCH_INDEX"
    "$py" -m pip install --disable-pip-version-check --index-url "$PEERS_TORCH_INDEX" \
      "$(grep '^torch==' "$requirements")"
  fi
  say "pip install -r $requirements (torch and its libraries are large: minutes)"
  "$py" -m pip install --disable-pip-version-check -r "$requirements"
fi
"$py" - <<'PY'
import numpy, torch, jax
print(f"peers-venv: numpy {numpy.__version__}, torch {torch.__version__}, jax {jax.__version__} "
      f"({jax.devices('cpu')[0].platform}); torch threads {torch.get_num_threads()}")
PY
say "jemalloc: $(dpkg -L libjemalloc2 2>/dev/null | grep '/libjemalloc\.so\.2$' || echo 'not found')"
