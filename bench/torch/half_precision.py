"""bf16 models of the model set (tests/python/torch_models.py) compiled by Stitch with
and without f32 intermediates (options={"f32_intermediates": ...}, docs/torch.md, Half
precision between ops) and by Inductor, in one process on the same weights and
inputs: 2 untimed and N timed rounds, each round calling every variant once and
starting with the next one, the median per variant printed. Inference runs under
torch.inference_mode(); a training step zeroes the gradients, runs the forward, the
mean square of the first output in f32 and the backward.

    PYTHONPATH=build/python .venv/bin/python bench/torch/half_precision.py \\
        llama_block,gpt2_block inference 10
"""

import os
import statistics
import sys
import time

import torch

import stitch.torch_backend  # noqa: F401  (registers backend="stitch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "python"))
from torch_models import models, randomise  # noqa: E402


def main():
    names = sys.argv[1].split(",")
    mode = sys.argv[2] if len(sys.argv) > 2 else "inference"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    table = models(False)
    for name in names:
        _, make_model, make_inputs = table[name]
        torch.manual_seed(0)
        model = randomise(make_model()).to(torch.bfloat16)
        inputs = tuple(a.to(torch.bfloat16) if a.is_floating_point() else a for a in make_inputs())
        torch._dynamo.reset()
        fns = {"inductor": torch.compile(model),
               "wide": torch.compile(model, backend="stitch", options={"f32_intermediates": True}),
               "rounded": torch.compile(model, backend="stitch", options={"f32_intermediates": False})}

        def call(fn):
            if mode == "inference":
                with torch.inference_mode():
                    return fn(*inputs)
            for p in model.parameters():
                p.grad = None
            out = fn(*inputs)
            (out[0] if isinstance(out, tuple) else out).float().pow(2).mean().backward()
            return None

        times = {v: [] for v in fns}
        order = list(fns)
        for r in range(-2, rounds):
            for v in order[r % 3:] + order[:r % 3]:
                start = time.perf_counter()
                call(fns[v])
                if r >= 0:
                    times[v].append(time.perf_counter() - start)
        med = {v: statistics.median(t) * 1e3 for v, t in times.items()}
        print(name, mode, " ".join(f"{v} {m:.2f}ms" for v, m in med.items()),
              f"wide/rounded {med['rounded'] / med['wide']:.3f}x  inductor/wide {med['inductor'] / med['wide']:.3f}x",
              flush=True)


if __name__ == "__main__":
    main()
