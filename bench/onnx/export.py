"""Exports the model set (tests/python/torch_models.py: the models bench/torch/run.py
compiles, and ResNet-18 and MobileNetV2) to ONNX as PyTorch's two exporters write it, with each model's inputs and
PyTorch's outputs as .npy files, for bench/onnx/check.py and the benchmark.

    python bench/onnx/export.py OUT_DIR [--small] [--models a,b] [--exporters torchscript,dynamo]
                                [--batches static,dynamic]

Exporters: "torchscript" is torch.onnx.export(dynamo=False) at opset 17, "dynamo" is
torch.onnx.export(dynamo=True) at its default opset (20 for torch 2.15) with the
weights in a file beside the model (model.onnx.data), as that exporter writes them.
Batches: "static" fixes every extent; "dynamic" names the batch dim of every input
"batch" (dynamic_axes / torch.export.Dim). Weights are random from a fixed seed, in
eval mode; nothing is downloaded.

Writes OUT_DIR/NAME.onnx (NAME = model-exporter-batch), OUT_DIR/NAME/inputs/INPUT.npy,
OUT_DIR/NAME/expected/OUTPUT.npy (eager PyTorch's outputs, by the ONNX output names) and
OUT_DIR/manifest.json: one entry per export with its files, or the exporter's error
(an export that fails is recorded, not fatal: the TorchScript exporter has no
rms_norm at opset 17, so the Llama models come only through the dynamo exporter).
"""

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
from torch_models import cnn_models, models, randomise  # noqa: E402

EXPORTERS = ("torchscript", "dynamo")
BATCHES = ("static", "dynamic")


def input_names(model_name, count):
    if count == 1:
        return ["x"]
    return ["x", "targets"] if model_name == "lm_head" else ["x", "mask"]


@contextlib.contextmanager
def quiet_stdout():
    """File descriptor 1 to /dev/null: the TorchScript exporter's C++ prints the whole
    graph there when an op has no symbolic (the error names the op anyway)."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(devnull)
        os.close(saved)


def export(model, args, names, path, exporter, dynamic):
    with warnings.catch_warnings(), quiet_stdout():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            axes = {n: {0: "batch"} for n in names} if dynamic else None
            torch.onnx.export(model, args, path, opset_version=17, dynamo=False, input_names=names,
                              output_names=["y"], dynamic_axes=axes)
        else:
            shapes = None
            if dynamic:
                batch = torch.export.Dim("batch", min=1, max=1024)
                shapes = tuple({0: batch} for _ in names)
            torch.onnx.export(model, args, path, dynamo=True, input_names=names, output_names=["y"],
                              dynamic_shapes=shapes, external_data=True, verbose=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--small", action="store_true", help="the test sizes (the default is the benchmark's)")
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--batches", default=",".join(BATCHES))
    args = parser.parse_args()
    table = {**models(args.small), **cnn_models(args.small)}
    chosen = args.models.split(",") if args.models else list(table)
    exporters = args.exporters.split(",")
    batches = args.batches.split(",")
    for what, given, known in (("model", chosen, table), ("exporter", exporters, EXPORTERS),
                               ("batch", batches, BATCHES)):
        unknown = [g for g in given if g not in known]
        if unknown:
            parser.error(f"unknown {what}(s) {', '.join(unknown)} (known: {', '.join(known)})")
    os.makedirs(args.out, exist_ok=True)
    entries = []
    for name in chosen:
        size, make_model, make_inputs = table[name]
        torch.manual_seed(0)
        model = randomise(make_model()).eval()
        inputs = make_inputs()
        names = input_names(name, len(inputs))
        with torch.no_grad():
            want = model(*inputs)
        for exporter in exporters:
            for batch in batches:
                stem = f"{name}-{exporter}-{batch}"
                entry = {"name": stem, "model": name, "size": size, "exporter": exporter, "batch": batch,
                         "file": stem + ".onnx"}
                start = time.perf_counter()
                try:
                    export(model, inputs, names, os.path.join(args.out, stem + ".onnx"), exporter,
                           batch == "dynamic")
                except Exception as e:  # the exporter's own failure, recorded
                    entry["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                    if os.environ.get("STITCH_EXPORT_TRACEBACK"):
                        traceback.print_exc()
                entry["export_s"] = round(time.perf_counter() - start, 2)
                if "error" not in entry:
                    folder = os.path.join(args.out, stem)
                    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
                    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
                    for n, t in zip(names, inputs):
                        np.save(os.path.join(folder, "inputs", n + ".npy"), t.numpy())
                    np.save(os.path.join(folder, "expected", "y.npy"), want.numpy())
                    entry["inputs"] = names
                    entry["outputs"] = ["y"]
                print(f"{stem}: {entry.get('error', 'ok')} ({entry['export_s']} s)", flush=True)
                entries.append(entry)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"torch": torch.__version__, "small": args.small, "exports": entries}, f, indent=1)


if __name__ == "__main__":
    main()
