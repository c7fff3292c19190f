#!/usr/bin/python3
"""Writes the ONNX backend node tests (model.onnx + input/output .pb per case)
from the case definitions of Debian's python3-onnx (docs/onnx.md).

    /usr/bin/python3 scripts/gen_onnx_node_tests.py OUT_DIR

Debian's python3-onnx 1.12 ships the generators, not the data; its case
definitions still use the numpy aliases (np.float, np.int, ...) that Debian's
numpy 1.24 removed, so they are put back before the generators are imported.
Must run under /usr/bin/python3 (the Debian interpreter that has onnx), not a
python3 from another installation earlier on PATH.
"""
import sys
import warnings

import numpy as np

if len(sys.argv) != 2:
    sys.exit("usage: gen_onnx_node_tests.py OUT_DIR")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    for name, value in {"float": float, "int": int, "bool": bool, "object": object,
                        "complex": complex, "str": str}.items():
        if not hasattr(np, name):
            setattr(np, name, value)

from onnx.backend.test.cmd_tools import main  # noqa: E402  (after the shim)

sys.argv = ["cmd_tools", "generate-data", "-o", sys.argv[1]]
main()
