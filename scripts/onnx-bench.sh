#!/usr/bin/env bash
# The ONNX model set against onnxruntime (bench/onnx/README.md): exports the model set at
# the benchmark's sizes (static batch, both exporters), then times Stitch under every
# planner beside onnxruntime in one process.
#   scripts/onnx-bench.sh PREFIX [run.py options...]      (e.g. bench/results/onnx-models-DATE-MACHINE)
# Needs the Python package built into .venv (scripts/setup.sh --python); installs
# bench/onnx/requirements.txt (onnxruntime) into .venv when missing. Exports go to
# build/onnx-bench/ (about 1 GB for the 12-layer BERT's two exports).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 1 ]] || { echo "usage: scripts/onnx-bench.sh PREFIX [run.py options...]" >&2; exit 2; }
prefix=$1
shift
[[ -x .venv/bin/python ]] || { echo "onnx-bench: no .venv; run scripts/setup.sh --python first" >&2; exit 2; }
if dry_run=$(.venv/bin/python -m pip install --disable-pip-version-check --dry-run -r bench/onnx/requirements.txt 2>/dev/null) &&
   ! grep -q '^Would install' <<<"$dry_run"; then
  echo "onnx-bench: the packages of bench/onnx/requirements.txt are installed"
else
  .venv/bin/python -m pip install -q --disable-pip-version-check -r bench/onnx/requirements.txt
fi
exports=build/onnx-bench
.venv/bin/python bench/onnx/export.py "$exports" --batches static 2>/dev/null
# glibc keeps freed memory, as for the torch benchmark (docs/torch.md, Performance).
MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 PYTHONPATH=build/python \
  .venv/bin/python bench/onnx/run.py "$exports" "$prefix" "$@"
