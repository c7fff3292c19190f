"""One switch of the Stitch backend measured in one process: the models of
tests/python/torch_models.py run under backend="stitch" with a module-level switch
of stitch.torch_backend on and off (each compiled with its setting; the switch is
read when a graph is compiled), and under Inductor, in rounds that start with a
different variant each time (bench/torch/run.py's method). Writes PREFIX.json and
PREFIX.md: per model and mode the medians, on/off and Inductor/on.

    PYTHONPATH=build/python .venv/bin/python bench/torch/switch.py PREFIX \\
        --switch layout_copies [--models t5_block,gpt2_block] [--modes training] \\
        [--dtype f32] [--repeat 11] [--warmup 2] [--profile P] [--small]

With --option NAME instead of --switch, the variants are the backend's option
(torch.compile(..., options={NAME: True}) and False), e.g. --option attention: every
attention fused against none.

With --profile P, P more rounds run under torch.profiler and each variant's rest (the
time outside matrix products and attention, run.py's measure) is reported too: the
end-to-end medians of product-bound models move by more between runs than a switch
of the memory-bound rest can.

Run it with glibc keeping freed memory, as run.py (bench/torch/README.md).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch

import stitch.torch_backend as backend

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import DTYPES, inference_call, machine, models, profiled, randomise, training_step  # noqa: E402

VARIANTS = ("on", "off", "inductor")


def _with(switch, value, option=False):
    """A backend of its own for a variant: Dynamo keeps one compiled graph per code
    object and backend, so two torch.compile(model, backend="stitch") share the first
    one's graph, and the second variant ran the first's setting (this script before
    2026-12-07: its off / on compared a setting with itself). The switch is set while
    the graph compiles; the backward, compiled at the first backward call, is covered
    by measure() setting it around that call too. With `option`, `switch` names an
    option of the backend instead, set to `value`."""
    def compile_with_switch(gm, example_inputs, **kwargs):
        if option:
            return backend.stitch_backend(gm, example_inputs, options={switch: value}, **kwargs)
        previous = getattr(backend, switch)
        setattr(backend, switch, value)
        try:
            return backend.stitch_backend(gm, example_inputs, **kwargs)
        finally:
            setattr(backend, switch, previous)
    return compile_with_switch


def measure(name, make_model, make_inputs, dtype, mode, switch, args):
    torch.manual_seed(0)
    model = randomise(make_model()).to(dtype)
    inputs = tuple(a.to(dtype) if a.is_floating_point() else a for a in make_inputs())
    torch._dynamo.reset()
    default = None if args.option else getattr(backend, switch)
    calls = {}
    try:
        for v in VARIANTS:
            fn = (torch.compile(model) if v == "inductor"
                  else torch.compile(model, backend=_with(switch, v == "on", args.option)))
            call = inference_call(fn, inputs) if mode == "inference" else training_step(fn, model, inputs)
            if v != "inductor" and not args.option:
                setattr(backend, switch, v == "on")
            call()  # compiles with the switch as set
            calls[v] = call
    finally:
        if not args.option:
            setattr(backend, switch, default)
    times = {v: [] for v in VARIANTS}
    for r in range(-args.warmup, args.repeat):
        for v in VARIANTS[r % 3:] + VARIANTS[:r % 3]:
            start = time.perf_counter()
            calls[v]()
            if r >= 0:
                times[v].append(time.perf_counter() - start)
    medians = {f"{v}_s": statistics.median(t) for v, t in times.items()}
    if args.profile:
        for v, (_, rest, _) in profiled(calls, args.profile).items():
            medians[f"{v}_rest_s"] = rest
    return {"model": name, "mode": mode, **medians,
            "off_vs_on": medians["off_s"] / medians["on_s"],
            "inductor_vs_on": medians["inductor_s"] / medians["on_s"],
            "inductor_vs_off": medians["inductor_s"] / medians["off_s"]}


def markdown(report):
    m = report["machine"]
    title = (f"option `{report['switch']}` True and False" if report.get("option")
             else f"`stitch.torch_backend.{report['switch']}` on and off")
    lines = [f"# {title}", "",
             f"{report['date']}, {m['cpu']} ({m['cpus']} CPUs), torch {m['torch']} with {m['threads']} threads, "
             f"{report['dtype']}.", "",
             f"`{report['command']}`", "",
             "Medians of the timed rounds; above 1: the switch on is faster (off / on), Stitch with it "
             "on faster than Inductor (Inductor / on).", "",
             "| model | mode | on ms | off ms | Inductor ms | off / on | Inductor / on | Inductor / off |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in report["rows"]:
        lines.append(f"| {r['model']} | {r['mode']} | {r['on_s'] * 1e3:.2f} | {r['off_s'] * 1e3:.2f} | "
                     f"{r['inductor_s'] * 1e3:.2f} | {r['off_vs_on']:.3f} | {r['inductor_vs_on']:.3f} | "
                     f"{r['inductor_vs_off']:.3f} |")
    if any("on_rest_s" in r for r in report["rows"]):
        lines += ["", "The rest (outside matrix products and attention; medians of the profiled calls, "
                  "bench/torch/run.py's method):", "",
                  "| model | mode | rest on ms | rest off ms | rest Inductor ms | off / on | Inductor / on |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in report["rows"]:
            if "on_rest_s" in r:
                lines.append(f"| {r['model']} | {r['mode']} | {r['on_rest_s'] * 1e3:.2f} | "
                             f"{r['off_rest_s'] * 1e3:.2f} | {r['inductor_rest_s'] * 1e3:.2f} | "
                             f"{r['off_rest_s'] / r['on_rest_s']:.3f} | "
                             f"{r['inductor_rest_s'] / r['on_rest_s']:.3f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix", help="writes PREFIX.json and PREFIX.md")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--switch", help="a True/False attribute of stitch.torch_backend")
    which.add_argument("--option", help="an option of the backend, True against False")
    parser.add_argument("--models", default="t5_block,gpt2_block,bert_layer,vit_block,llama_block,mixer_block")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--dtype", default="f32", choices=sorted(DTYPES))
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--profile", type=int, default=0, help="profiled rounds for the rest (0: none)")
    parser.add_argument("--small", action="store_true", help="the tests' sizes, to check the script")
    args = parser.parse_args()
    if args.option:
        args.switch = args.option
    elif not isinstance(getattr(backend, args.switch, None), bool):
        parser.error(f"stitch.torch_backend has no True/False switch {args.switch!r}")
    table = models(args.small)
    unknown = [m for m in args.models.split(",") if m not in table]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    rows = []
    for name in args.models.split(","):
        size, make_model, make_inputs = table[name]
        for mode in args.modes.split(","):
            row = measure(name, make_model, make_inputs, DTYPES[args.dtype], mode, args.switch, args)
            rows.append(row)
            print(f"{name} {mode}: off/on {row['off_vs_on']:.3f}, Inductor/on {row['inductor_vs_on']:.3f}",
                  flush=True)
    env = " ".join(f"{k}={os.environ[k]}" for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
                   if k in os.environ)
    report = {"switch": args.switch, "option": bool(args.option), "date": datetime.date.today().isoformat(), "machine": machine(),
              "dtype": args.dtype,
              "command": (env + " " if env else "") + "python " + " ".join(sys.argv), "rows": rows}
    with open(args.prefix + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(args.prefix + ".md", "w") as f:
        f.write(markdown(report))


if __name__ == "__main__":
    main()
