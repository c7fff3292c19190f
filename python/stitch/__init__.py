"""Stitch from Python (docs/python.md).

Graphs and user kernels are parsed from `.stitch` text; a graph compiles into a callable
on numpy arrays; lazy arrays record kernel calls and run them fused when read.

    import numpy as np, stitch
    m = stitch.parse(open("layernorm.stitch").read())
    run = stitch.compile(m.graphs["layernorm"], backend="cpu", planner="stitch")
    y = run(np.random.rand(8, 768).astype(np.float32), gamma, beta)

Errors in the user's input raise stitch.Error (a ValueError) with the message the
command line prints.
"""

from ._stitch import (  # noqa: F401  (the package's API)
    Array,
    Error,
    Executable,
    Graph,
    GraphBuilder,
    Kernel,
    LazyRuntime,
    Module,
    OnnxModel,
    Scalar,
    Value,
    compile,
    cuda_available,
    interpret,
    load,
    load_onnx,
    load_package,
    parse,
    report_page,
    report_sections,
    version,
)
from ._stitch import __version__  # noqa: F401

__all__ = [
    "Array",
    "Error",
    "Executable",
    "Graph",
    "GraphBuilder",
    "Kernel",
    "LazyRuntime",
    "Module",
    "OnnxModel",
    "Scalar",
    "Value",
    "compile",
    "cuda_available",
    "interpret",
    "load",
    "load_onnx",
    "load_package",
    "parse",
    "report_page",
    "report_sections",
    "version",
]

# torch.compile(model, backend="stitch") (docs/torch.md): registered here when the
# program already uses torch, so that importing stitch alone never imports torch;
# otherwise torch finds the backend through the torch_dynamo_backends entry point
# that scripts/setup.sh --python installs.
import sys as _sys

if "torch" in _sys.modules:
    from . import torch_backend  # noqa: F401,E402
