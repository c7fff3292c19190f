"""Stitch against onnxruntime on the model set's ONNX exports (bench/onnx/export.py), in
one process, alternating, like for like; writes PREFIX.json, PREFIX.md and PREFIX.svg (a plot
of one planner's ratios: stitch's where it ran, else the first planner's).

    python bench/onnx/run.py EXPORT_DIR PREFIX [--planners none,xla,stitch,greedy,ilp]
                             [--only NAME,...] [--repeat N] [--warmup N] [--threads T]

Per export (static batch only): onnxruntime's CPU provider with every graph
optimisation (ORT_ENABLE_ALL, which fuses attention, LayerNorm and GELU itself; the
next level down where its optimisers refuse the model, recorded as ort_level),
T intra-op threads and one inter-op thread; Stitch's CPU back end under each planner
(stitch.load_onnx, stitch.compile), its OpenMP threads T. Both allocate their outputs
on every call (onnxruntime's InferenceSession.run, Stitch's compiled call without
out=). The model's initializers are constants to both: onnxruntime prepacks them when the
session is made, Stitch is told they are (stitch.compile's constants) and packs a
convolution's weights on its first call. Each variant is built and run once untimed, its outputs checked against
onnxruntime's (|a - b| <= 1e-3 |b| + 1e-3 + 1e-6 max|b|) and PyTorch's; then W untimed and N timed
rounds call every variant 1 + B times in a row, each round starting with the next
variant, the first call of each block untimed (time_calls says why), and the median of
each variant's N x B times is reported.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time

import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name  # noqa: E402
from ratio_svg import ratio_bars  # noqa: E402

PLANNERS = ("none", "xla", "stitch", "greedy", "ilp")


def machine():
    return {"cpu": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version()}


LEVELS = ("ORT_ENABLE_ALL", "ORT_ENABLE_EXTENDED", "ORT_ENABLE_BASIC", "ORT_DISABLE_ALL")


def ort_session(path, threads):
    """onnxruntime's session at the highest optimisation level that loads the model
    (onnxruntime 1.32's optimisers reject the TorchScript T5 export as an invalid
    model; unoptimised, it loads), and that level's name."""
    import onnxruntime as ort
    for k, level in enumerate(LEVELS):
        options = ort.SessionOptions()
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        try:
            return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]), level
        except Exception:
            if k == len(LEVELS) - 1:
                raise


def close(got, want, rtol=1e-3, atol=1e-3, scale=1e-6):
    """|a - b| <= rtol |b| + atol + scale max|b|: the last term is the cancellation error
    of an element near 0 in an output of large values (ResNet-18's random-weight logits
    reach 8,000, where onnxruntime and PyTorch differ by 0.004)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, float("inf")
    diff = float(np.max(np.abs(got - want))) if want.size else 0.0
    largest = float(np.max(np.abs(want))) if want.size else 0.0
    return bool(np.all(np.abs(got - want) <= rtol * np.abs(want) + atol + scale * largest)), diff


def run_export(entry, folder, planners, args):
    import stitch
    path = os.path.join(folder, entry["file"])
    data = os.path.join(folder, entry["name"])
    feeds = {n: np.load(os.path.join(data, "inputs", n + ".npy")) for n in entry["inputs"]}
    torch_out = np.load(os.path.join(data, "expected", "y.npy"))
    result = {"name": entry["name"], "model": entry["model"], "size": entry["size"], "exporter": entry["exporter"]}
    calls = {}
    start = time.perf_counter()
    try:
        session, result["ort_level"] = ort_session(path, args.threads)
    except Exception as e:  # onnxruntime's refusal of the export, recorded
        result["ort_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        return result, {}
    result["ort_build_s"] = time.perf_counter() - start
    calls["onnxruntime"] = lambda: session.run(None, feeds)[0]
    want = calls["onnxruntime"]()
    result["ort_vs_torch"] = close(want, torch_out)[1]
    try:
        start = time.perf_counter()
        model = stitch.load_onnx(path)
        arguments = model.arguments(*[feeds[n] for n in entry["inputs"]])
        result["import_s"] = time.perf_counter() - start
    except stitch.Error as e:
        result["stitch_error"] = str(e).splitlines()[0][:300]
        return result, {}
    for p in planners:
        try:
            start = time.perf_counter()
            # The initializers are constants, as onnxruntime's session takes them: conv weights packed once.
            compiled = stitch.compile(model.graph, backend="cpu", planner=p, constants=list(model.bound))
            got = compiled(*arguments)
            got = got[0] if isinstance(got, tuple) else got
            result[f"{p}_compile_s"] = time.perf_counter() - start
            result[f"{p}_kernels"] = compiled.kernel_count
            ok, diff = close(got, want)
            result[f"{p}_vs_ort"] = diff
            result[f"{p}_vs_torch"] = close(got, torch_out)[1]
            if not ok:
                result[f"{p}_error"] = f"differs from onnxruntime by {diff:.3g}"
                continue
            calls[p] = (lambda c: lambda: c(*arguments))(compiled)
        except stitch.Error as e:
            result[f"{p}_error"] = str(e).splitlines()[0][:300]
    return result, calls


def time_calls(result, calls, args):
    """Rounds of blocks: each round calls every variant B times in a row, the order
    rotating by one variant a round; the first call of each block is not kept. Both
    runtimes' threads spin for a while after a call (onnxruntime's intra-op pool,
    OpenMP's), which on a machine with few cores slows whatever runs next: a
    variant's first call after the other's pays for it, the rest run as a user's
    repeated calls do."""
    times = {v: [] for v in calls}
    order = list(calls)
    for r in range(-args.warmup, args.repeat):
        for v in order[r % len(order):] + order[:r % len(order)]:
            for k in range(args.block + 1):
                start = time.perf_counter()
                calls[v]()
                if r >= 0 and k > 0:
                    times[v].append(time.perf_counter() - start)
    for v, t in times.items():
        result[f"{v}_s"] = statistics.median(t)
    ort = result.get("onnxruntime_s")
    for v in calls:
        if v != "onnxruntime" and ort:
            result[f"{v}_vs_onnxruntime"] = ort / result[f"{v}_s"]


def markdown(report, planners):
    m = report["machine"]
    lines = [f"# Stitch against onnxruntime on the model set's ONNX exports ({report['date']})", "",
             f"Machine: {m['cpu']}, {m['cpus']} CPUs, Python {m['python']}, onnxruntime {report['onnxruntime']}, "
             f"torch {report.get('torch')} (the exporters), {report['threads']} threads each. Command: "
             f"`{report['command']}`. Method: the docstring of bench/onnx/run.py (" +
             (f"rounds of {report['block']} timed calls in a row per variant after an untimed one, medians over "
              f"{report['repeat']} rounds" if report.get("block") else
              f"medians of {report['repeat']} alternating rounds of one call per variant") +
             f" after {report['warmup']} warm-up rounds; both allocate their outputs every call). "
             "Times in ms, and in brackets onnxruntime's time over Stitch's (above 1: Stitch faster).", "",
             "| export | size | onnxruntime | " + " | ".join(f"stitch {p}" for p in planners) +
             " | kernels (" + ", ".join(planners) + ") |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in planners) + " | --- |"]
    for r in report["results"]:
        if "ort_error" in r:
            lines.append(f"| {r['name']} | {r['size']} | refused: {r['ort_error'][:100]} |")
            continue
        if "stitch_error" in r:
            lines.append(f"| {r['name']} | {r['size']} | {r.get('onnxruntime_s', 0) * 1e3:.2f} | "
                         f"refused: {r['stitch_error'][:100]} |")
            continue
        cells = []
        for p in planners:
            if f"{p}_s" in r:
                cells.append(f"{r[f'{p}_s'] * 1e3:.2f} ({r[f'{p}_vs_onnxruntime']:.2f}x)")
            else:
                cells.append(r.get(f"{p}_error", "-")[:60])
        kernels = ", ".join(str(r.get(f"{p}_kernels", "-")) for p in planners)
        level = "" if r.get("ort_level", LEVELS[0]) == LEVELS[0] else f" ({r['ort_level']})"
        lines.append(f"| {r['name']} | {r['size']} | {r['onnxruntime_s'] * 1e3:.2f}{level} | " + " | ".join(cells) +
                     f" | {kernels} |")
    for p in planners:
        ratios = [r[f"{p}_vs_onnxruntime"] for r in report["results"] if f"{p}_vs_onnxruntime" in r]
        if ratios:
            mean = math.exp(sum(math.log(v) for v in ratios) / len(ratios))
            lines.append(f"\nstitch {p}: geometric mean {mean:.3f}x over {len(ratios)} exports, "
                         f"lowest {min(ratios):.2f}x, highest {max(ratios):.2f}x.")
    return "\n".join(lines) + "\n"


def svg(report, planners):
    """onnxruntime's time over Stitch's, one bar per export (bench/ratio_svg.py)."""
    planner = "stitch" if "stitch" in planners else planners[0]
    rows = [(r["name"], r.get(f"{planner}_vs_onnxruntime"), r.get("ort_error") or r.get("stitch_error") or r.get(f"{planner}_error"))
            for r in report["results"]]
    m = report["machine"]
    return ratio_bars(f"Stitch ({planner} planner) vs onnxruntime (onnxruntime time / Stitch time), {report['date']}",
                      f"{m['cpu']}, {m['cpus']} CPUs, onnxruntime {report['onnxruntime']}, {report['threads']} threads",
                      rows, "logarithmic; right of 1: Stitch faster than onnxruntime")


def write_reports(report, prefix, planners):
    with open(prefix + ".md", "w") as f:
        f.write(markdown(report, planners))
    with open(prefix + ".svg", "w") as f:
        f.write(svg(report, planners))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("prefix")
    parser.add_argument("--planners", default=",".join(PLANNERS))
    parser.add_argument("--only", help="comma-separated export names")
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    parser.add_argument("--block", type=int, default=3, help="timed calls of a variant in a row (default 3)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--redraw", action="store_true", help="write PREFIX.md and PREFIX.svg again from PREFIX.json")
    args = parser.parse_args()
    planners = args.planners.split(",")
    if args.redraw:
        with open(args.prefix + ".json") as f:
            report = json.load(f)
        write_reports(report, args.prefix, planners)
        return
    unknown = [p for p in planners if p not in PLANNERS]
    if unknown:
        parser.error(f"unknown planner(s) {', '.join(unknown)}")
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import onnxruntime
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    exports = [e for e in manifest["exports"] if "error" not in e and e["batch"] == "static"]
    if args.only:
        exports = [e for e in exports if e["name"] in args.only.split(",")]
    report = {"date": datetime.date.today().isoformat(), "machine": machine(), "onnxruntime": onnxruntime.__version__,
              "torch": manifest.get("torch"), "threads": args.threads, "repeat": args.repeat, "warmup": args.warmup,
              "block": args.block,
              "command": " ".join(["python", "bench/onnx/run.py"] + sys.argv[1:]), "results": []}
    for entry in exports:
        result, calls = run_export(entry, args.folder, planners, args)
        if calls:
            time_calls(result, calls, args)
        report["results"].append(result)
        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in result.items()}), flush=True)
        with open(args.prefix + ".json", "w") as f:
            json.dump(report, f, indent=1)
    write_reports(report, args.prefix, planners)


if __name__ == "__main__":
    main()
