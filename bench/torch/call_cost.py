"""What a compiled function's call costs when its work is nothing (docs/torch.md, Per
call): `relu(x * y + 1)` on 8 f32 elements, one Stitch partition, compiled by
`torch.compile(backend="stitch")` and by Inductor, in one process, beside eager, in
inference mode. Rounds alternate between the variants; each round times, for each of
them, the best of 3 loops of N calls. Also the partition's own call
(`_StitchPartition`, what the generated forward calls) and `Executable.run_at` alone.
Reports the best round of each and every round:

    PYTHONPATH=build/python .venv/bin/python bench/torch/call_cost.py PREFIX [--rounds 4] [--calls 20000]

writes PREFIX.md and PREFIX.json.
"""

import argparse
import json
import os
import sys
import time

import torch

import stitch.torch_backend as backend

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name  # noqa: E402


def best_loop(fn, calls):
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    torch.set_num_threads(2)

    def f(x, y):
        return torch.relu(x * y + 1)

    def g(x, y):  # the same function, so Dynamo keeps a cache entry for each backend
        return torch.relu(x * y + 1)

    x, y = torch.randn(8), torch.randn(8)
    modules = []
    boxed = backend._boxed
    backend._boxed = lambda gm: (modules.append(gm), boxed(gm))[1]
    try:
        stitched = torch.compile(f, backend="stitch")
        inductor = torch.compile(g)
        with torch.inference_mode():
            torch.testing.assert_close(stitched(x, y), f(x, y))
            torch.testing.assert_close(inductor(x, y), f(x, y))
    finally:
        backend._boxed = boxed
    partitions = [m for m in modules[0].children() if isinstance(m, backend._StitchPartition)]
    if len(partitions) != 1 or partitions[0].only is None or partitions[0].only.exe is None:
        sys.exit("call_cost.py: expected one static Stitch partition, got " + repr(partitions))
    partition = partitions[0]
    exe = partition.only.exe
    out = torch.empty(8)
    addresses = ([x.data_ptr(), y.data_ptr()], [out.data_ptr()])
    variants = {
        "stitch": lambda: stitched(x, y),
        "inductor": lambda: inductor(x, y),
        "eager": lambda: f(x, y),
        "stitch partition": lambda: partition(x, y),
        "Executable.run_at": lambda: exe.run_at(*addresses, None),
    }
    rounds = {name: [] for name in variants}
    with torch.inference_mode():
        for r in range(args.rounds):
            names = list(variants)
            names = names[r % len(names):] + names[:r % len(names)]
            for name in names:
                rounds[name].append(best_loop(variants[name], args.calls))
    best = {name: min(times) for name, times in rounds.items()}
    command = " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    result = {"command": command, "machine": f"{cpu_name()}, {os.cpu_count()} cores", "torch": torch.__version__,
              "calls": args.calls, "rounds": rounds, "best_us": best}
    with open(args.prefix + ".json", "w") as fh:
        json.dump(result, fh, indent=1)
    lines = ["# A compiled function's call: relu(x * y + 1) on 8 f32 elements", "",
             f"Machine: {result['machine']}. Command: `{command}`; torch {torch.__version__}; {args.rounds} rounds, each the best of 3 loops of "
             f"{args.calls} calls a variant, the variants' order rotating by round.", "",
             "| variant | best round (µs a call) | every round |", "| --- | ---: | --- |"]
    for name in variants:
        lines.append(f"| {name} | {best[name]:.2f} | {' '.join(f'{t:.2f}' for t in rounds[name])} |")
    lines += ["", f"Stitch's call over Inductor's: {best['stitch'] / best['inductor']:.2f}x the time "
                  f"({best['stitch'] - best['inductor']:+.2f} µs)."]
    with open(args.prefix + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
