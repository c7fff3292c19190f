"""The model set (tests/python/torch_models.py) run eagerly, compiled by Inductor
(torch.compile's default) and compiled by Stitch (torch.compile(backend="stitch"),
docs/torch.md), in one process, on the same weights and inputs, in f32 and bf16, for
inference and for a training step. Writes PREFIX.json, PREFIX.md (the table) and
PREFIX.svg (Stitch against Inductor, bars); how to run it: bench/torch/README.md.

Per model, dtype and mode, after torch._dynamo.reset(): each variant is compiled by its
first call (compile_s) and checked against eager, then W untimed and N timed rounds call
every variant once, each round starting with the next variant (a call runs slower after
another variant's: bench/python/torch_blocks.py, docs/torch.md), and the median of each
variant's N times is reported. Inference is a call under torch.inference_mode();
a training step zeroes the gradients (set_to_none), runs the forward, the loss (the LM
head's own, else the mean square of the output in f32) and the backward, all timed.
A variant that fails is recorded with its error and left out of the rounds.

The time outside matrix products and attention (the issue's "rest"): after the rounds,
P more rounds call each variant once under torch.profiler, and each call's wall time
less the self time of its matrix product and attention ops (LIBRARY_OPS) is that call's
rest; the median over the P calls is reported. Of the rest, the part in generated
code ("in kernels"): Inductor's compiled graphs' self time (its kernels and the Python
wrapper that calls them and the library) and Stitch's partitions' time by
stitch.torch_backend.profiling() (their calls, kernels and conversions). (Subtracting
the products' profiled time from the timed median, as this script did before
2026-12-07, put the products' spread between calls, several times the rest on
product-bound models, into the rest.)
"""

import argparse
import contextlib
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
import traceback
import warnings

import torch
from torch._inductor import config as inductor_config
from torch._inductor import metrics as inductor_metrics

import stitch
import stitch.torch_backend as backend

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "python"))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, ".."))
from cpu_name import cpu_name  # noqa: E402
from report import markdown, row, svg  # noqa: E402
from torch_models import models, randomise  # noqa: E402

VARIANTS = ("eager", "inductor", "stitch")
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
MODES = ("inference", "training")


def loss_of(output):
    return output if output.dim() == 0 else output.float().square().mean()


def inference_call(fn, inputs):
    def call():
        with torch.inference_mode():
            return fn(*inputs)
    return call


def training_step(fn, model, inputs):
    def step():
        model.zero_grad(set_to_none=True)
        loss = loss_of(fn(*inputs))
        loss.backward()
        return loss
    return step


def result_of(call, model, mode):
    """What is compared with eager: the output, or the loss and every gradient."""
    out = call()
    if mode == "inference":
        return [out.detach().double()]
    return [out.detach().double()] + [p.grad.double() for p in model.parameters()]


def difference(got, want):
    """Inference: the output's max |difference|. Training: the largest, over the loss and
    the gradients, of max |difference| over eager's max |value| (where that is above 1)."""
    if len(want) == 1:
        return (got[0] - want[0]).abs().max().item()
    return max(((g - w).abs().max() / w.abs().max().clamp(min=1.0)).item() for g, w in zip(got, want))


def error_text(e):
    """The first line of the innermost error: Dynamo wraps a backend's in its own."""
    while getattr(e, "inner_exception", None) or e.__cause__:
        e = getattr(e, "inner_exception", None) or e.__cause__
    lines = str(e).strip().splitlines()
    return f"error: {type(e).__name__}: {lines[0] if lines else ''}"[:200]


def failed(result, variant, e, args):
    result[f"{variant}_error"] = error_text(e)
    if args.verbose:
        traceback.print_exc()


def run_case(name, size, make_model, make_inputs, dtype_name, mode, args):
    result = {"model": name, "size": size, "dtype": dtype_name, "mode": mode}
    dtype = DTYPES[dtype_name]
    torch.manual_seed(0)
    model = randomise(make_model()).to(dtype)
    inputs = tuple(a.to(dtype) if a.is_floating_point() else a for a in make_inputs())
    torch._dynamo.reset()
    backend.reset_stats()
    inductor_metrics.reset()
    fns = {"eager": model, "inductor": torch.compile(model), "stitch": torch.compile(model, backend="stitch")}
    calls = {v: inference_call(fn, inputs) if mode == "inference" else training_step(fn, model, inputs)
             for v, fn in fns.items()}
    want = None
    for v in VARIANTS:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                calls[v]()
                result[f"{v}_compile_s"] = time.perf_counter() - start
                got = result_of(calls[v], model, mode)
            if v == "eager":
                want = got
            else:
                result[f"{v}_max_difference"] = difference(got, want)
            if v == "inductor":
                result["inductor_kernels"] = inductor_metrics.generated_kernel_count
            if v == "stitch":
                stats = backend.all_stats()
                result["stitch_kernels"] = sum(s.kernel_count for s in stats)
                result["stitch_partitions"] = sum(len(s.partitions) for s in stats)
                result["stitch_fallbacks"] = [f"{p.name}: {p.fallback}" for s in stats for p in s.partitions
                                              if p.fallback]
                result["stitch_warnings"] = sorted({str(w.message)[:200] for w in caught})
        except Exception as e:
            failed(result, v, e, args)
            del calls[v]
            if v == "eager":
                return result
    times = {v: [] for v in calls}
    for r in range(-args.warmup, args.repeat):
        order = list(calls)
        for v in order[r % len(order):] + order[:r % len(order)]:
            try:
                start = time.perf_counter()
                calls[v]()
                seconds = time.perf_counter() - start
            except Exception as e:
                failed(result, v, e, args)
                del calls[v], times[v]
                continue
            if r >= 0:
                times[v].append(seconds)
    for v, t in times.items():
        result[f"{v}_s"] = statistics.median(t)
    if args.profile:
        for v, (products, rest, kernels) in profiled(calls, args.profile).items():
            result[f"{v}_products_s"] = products
            result[f"{v}_rest_s"] = rest
            if kernels is not None:
                result[f"{v}_kernels_s"] = kernels
        if result.get("stitch_rest_s", 0) > 0 and result.get("inductor_rest_s", 0) > 0:
            result["stitch_rest_vs_inductor"] = result["inductor_rest_s"] / result["stitch_rest_s"]
    if "stitch_s" in result and "inductor_s" in result:
        result["stitch_vs_inductor"] = result["inductor_s"] / result["stitch_s"]
    if "stitch_s" in result and "eager_s" in result:
        result["stitch_vs_eager"] = result["eager_s"] / result["stitch_s"]
    return result


# Matrix products and attention as PyTorch runs them (for every variant, also under
# Inductor, whose generated code calls them): the targets set the time outside
# them apart. A Stitch dot or attention inside a partition is not among them, so it
# counts as Stitch's rest (the unfavourable way).
LIBRARY_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::matmul", "aten::linear",
               "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::_scaled_dot_product_attention_math",
               "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
               "aten::scaled_dot_product_attention", "aten::_mkldnn_linear"}


def partition_seconds():
    """The seconds profiling() has counted in every Stitch partition so far."""
    return sum(p.seconds["stitch"] for s in backend.all_stats() for p in s.partitions)


def profiled(calls, rounds):
    """Per variant, the median over `rounds` profiled calls of the seconds inside matrix
    products and attention (torch.profiler's self time of those ops: their own work, the
    profiler's overhead falling on the other ops) and of the rest (the call's wall time
    less that, from the same call, so the products' spread between calls does not land
    in the rest), and of the rest's part in generated code (Inductor: its compiled
    graphs' self time; Stitch: its partitions' time; None for eager). The rounds rotate
    the variants as the timed rounds do."""
    from torch.profiler import ProfilerActivity, profile

    products = {v: [] for v in calls}
    rests = {v: [] for v in calls}
    kernels = {v: [] for v in calls}
    order = list(calls)
    for r in range(rounds):
        for v in order[r % len(order):] + order[:r % len(order)]:
            before = partition_seconds()
            timed = backend.profiling() if v == "stitch" else contextlib.nullcontext()
            with profile(activities=[ProfilerActivity.CPU]) as prof, timed:
                start = time.perf_counter()
                calls[v]()
                seconds = time.perf_counter() - start
            events = prof.key_averages()
            inside = 1e-6 * sum(e.self_cpu_time_total for e in events if e.key in LIBRARY_OPS)
            products[v].append(inside)
            rests[v].append(seconds - inside)
            if v == "inductor":
                kernels[v].append(1e-6 * sum(e.self_cpu_time_total for e in events
                                             if e.key.startswith("## Call CompiledFxGraph")))
            elif v == "stitch":
                kernels[v].append(partition_seconds() - before)
    return {v: (statistics.median(products[v]), statistics.median(rests[v]),
                statistics.median(kernels[v]) if kernels[v] else None) for v in calls}


def stitch_origin():
    """Where the imported stitch package lies, relative to the repository where it is
    inside (build/python/stitch under PYTHONPATH=build/python), else "installed". A copy
    in an environment's site-packages may predate the build: then a warning."""
    repo = os.path.dirname(os.path.dirname(HERE))
    folder = os.path.dirname(os.path.abspath(stitch.__file__))
    if "site-packages" in folder.split(os.sep):
        warnings.warn(f"stitch is imported from an installed copy ({folder}), not this build: "
                      "run with PYTHONPATH=build/python to measure the build")
    return os.path.relpath(folder, repo) if os.path.commonpath([repo, folder]) == repo else "installed"


def machine():
    return {"cpu": cpu_name(), "cpus": os.cpu_count(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "python": platform.python_version(), "stitch": stitch_origin()}


def listed(text, known, what):
    names = [n for n in text.split(",") if n] or list(known)
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="writes PREFIX.json, PREFIX.md and PREFIX.svg")
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--dtypes", default="f32,bf16")
    parser.add_argument("--modes", default="inference,training")
    parser.add_argument("--repeat", type=int, default=21, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls of each variant after compiling")
    parser.add_argument("--small", action="store_true", help="the tests' small sizes, to check the script")
    parser.add_argument("--verbose", action="store_true", help="print the traceback of a variant that fails")
    parser.add_argument("--profile", type=int, default=3, metavar="N",
                        help="calls profiled per variant for the time in matrix products and attention (0: none)")
    args = parser.parse_args()

    # Inductor compiles afresh, not from its on-disk graph cache, so that its generated
    # kernels are counted (the count is of kernels generated in this process).
    inductor_config.fx_graph_cache = False
    table = models(args.small)
    names = listed(args.models, table, "models")
    dtypes = listed(args.dtypes, DTYPES, "dtypes")
    modes = listed(args.modes, MODES, "modes")
    info = machine()
    # Settings that change what is measured (the allocator's, the thread team's) go with the command.
    settings = [f"{k}={v}" for k, v in sorted(os.environ.items())
                if k.startswith(("MALLOC_", "OMP_", "GOMP_", "STITCH_", "THP_"))]
    report = {"machine": info, "date": datetime.datetime.now().strftime("%Y-%m-%d"),
              "command": " ".join(settings + [os.path.basename(sys.executable)] + sys.argv),
              "repeat": args.repeat, "warmup": args.warmup, "results": []}
    for name in names:
        size, make_model, make_inputs = table[name]
        for dtype_name in dtypes:
            for mode in modes:
                report["results"].append(run_case(name, size, make_model, make_inputs, dtype_name, mode, args))
                print(row(report["results"][-1]), flush=True)
                gc.collect()
    with open(args.prefix + ".json", "w") as f:
        json.dump(report, f, indent=1)
    text = markdown(report)
    with open(args.prefix + ".md", "w") as f:
        f.write(text)
    with open(args.prefix + ".svg", "w") as f:
        f.write(svg(report))
    print(text)


if __name__ == "__main__":
    main()
