"""bench/torch/run.py's report: the Markdown table and the SVG plot of Stitch against
Inductor, both from the JSON report the run writes (so either can be redrawn from it:
`python3 bench/torch/report.py PREFIX`)."""

import json
import math
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ratio_svg import ratio_bars  # noqa: E402

MODE_NAMES = {"inference": "inference", "training": "training step"}


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _ms(r, variant):
    if f"{variant}_error" in r:
        return r[f"{variant}_error"].replace("|", "\\|")[:120]
    return f"{r[f'{variant}_s'] * 1e3:.3f}" if f"{variant}_s" in r else "-"


def _ratio(r, key):
    return f"{r[key]:.2f}x" if key in r else "-"


def _difference(r):
    return " / ".join(f"{r[k]:.1e}" if k in r else "-" for k in ("inductor_max_difference", "stitch_max_difference"))


def _kernels(r):
    stitch = f"{r['stitch_kernels']} ({r['stitch_partitions']})" if "stitch_kernels" in r else "-"
    return f"{r.get('inductor_kernels', '-')} / {stitch}"


def _rest(r):
    if "stitch_rest_s" not in r or "inductor_rest_s" not in r:
        return "-"
    if r["stitch_rest_s"] <= 0 or r["inductor_rest_s"] <= 0:
        return "no measurement"
    return (f"{r['inductor_rest_s'] * 1e3:.2f} / {r['stitch_rest_s'] * 1e3:.2f} "
            f"({_ratio(r, 'stitch_rest_vs_inductor')})")


def _in_kernels(r):
    if "stitch_kernels_s" not in r or "inductor_kernels_s" not in r:
        return "-"
    return f"{r['inductor_kernels_s'] * 1e3:.2f} / {r['stitch_kernels_s'] * 1e3:.2f}"


def row(r):
    """One model, dtype and mode: the table's row."""
    return (f"| {r['model']} | {r['dtype']} | {MODE_NAMES[r['mode']]} | {_ms(r, 'eager')} | {_ms(r, 'inductor')} | "
            f"{_ms(r, 'stitch')} | {_ratio(r, 'stitch_vs_inductor')} | {_ratio(r, 'stitch_vs_eager')} | "
            f"{_rest(r)} | {_in_kernels(r)} | {_difference(r)} | {_kernels(r)} |")


def markdown(report):
    m = report["machine"]
    results = report["results"]
    lines = [f"# torch.compile on the model set: eager, Inductor and Stitch ({report['date']})", "",
             f"Machine: {m['cpu']}, {m['cpus']} CPUs, torch {m['torch']} ({m['threads']} threads), "
             f"Python {m['python']}" + (f", stitch from {m['stitch']}" if "stitch" in m else "") +
             f". Command: `{report['command']}`. Method: the docstring of bench/torch/run.py "
             f"(medians of {report['repeat']} interleaved rounds after {report['warmup']} warm-up rounds; "
             "a training step is zeroing the gradients, forward, loss and backward).", "",
             "Stitch vs Inductor: Inductor's time over Stitch's (above 1: Stitch faster). Max diff vs eager: "
             "inference, the output's max |difference|; training, the largest over the loss and the gradients of "
             "max |difference| over eager's max |value| (where above 1). Kernels: Inductor's generated kernels / "
             "Stitch's kernels (partitions), forward and backward together. Rest: the time outside matrix "
             "products and attention (per profiled call, its time less those ops' self time under torch.profiler, "
             "median over the profiled calls; a Stitch dot "
             "or attention inside a partition counts as rest), and Inductor's rest over Stitch's. Of it in "
             "kernels: the part in generated code, Inductor's compiled graphs' self time (kernels and wrapper) / "
             "Stitch's partitions by profiling() (calls, kernels, conversions); the rest of the rest is PyTorch's "
             "ops between them, the FX code and the profiler's overhead per op.", ""]
    sizes = {}
    for r in results:
        sizes.setdefault(r["model"], r["size"])
    lines += [f"- {name}: {size}" for name, size in sizes.items()] + [""]
    lines += ["| model | dtype | mode | eager ms | Inductor ms | Stitch ms | Stitch vs Inductor | Stitch vs eager "
              "| rest ms Inductor / Stitch | of it in kernels ms | max diff vs eager Inductor / Stitch | "
              "kernels Inductor / Stitch |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [row(r) for r in results]
    lines += ["", "Geometric mean of Stitch vs Inductor:", ""]
    for mode in MODE_NAMES:
        ratios = [r["stitch_vs_inductor"] for r in results if r["mode"] == mode and "stitch_vs_inductor" in r]
        runs = sum(r["mode"] == mode for r in results)
        if runs:
            mean = f"{geometric_mean(ratios):.3f}x" if ratios else "-"
            lines.append(f"- {MODE_NAMES[mode]}: {mean} over {len(ratios)} of {runs} model x dtype with both times")
            rests = [r["stitch_rest_vs_inductor"] for r in results
                     if r["mode"] == mode and r.get("stitch_rest_vs_inductor", 0) > 0]
            if rests:
                lines.append(f"  - outside matrix products and attention: {geometric_mean(rests):.3f}x over "
                             f"{len(rests)} with a measurement")
    fallbacks = [(r, f) for r in results for f in r.get("stitch_fallbacks", [])]
    if fallbacks:
        lines += ["", "Stitch partitions that fell back to PyTorch:", ""]
        lines += [f"- {r['model']} {r['dtype']} {r['mode']}: {f}" for r, f in fallbacks]
    return "\n".join(lines) + "\n"


def svg(report):
    """Horizontal bars, one per model, dtype and mode: Inductor's time over Stitch's on a
    logarithmic axis (bench/ratio_svg.py); a row without both times says why."""
    rows = []
    for r in report["results"]:
        why = next((r[k] for k in ("stitch_error", "inductor_error", "eager_error") if k in r), "no time")
        rows.append((f"{r['model']} {r['dtype']} {MODE_NAMES[r['mode']]}", r.get("stitch_vs_inductor"), why))
    m = report["machine"]
    return ratio_bars(f"Stitch vs Inductor (Inductor time / Stitch time), {report['date']}",
                      f"{m['cpu']}, torch {m['torch']}, {m['threads']} threads", rows,
                      "logarithmic; right of 1: Stitch faster than Inductor")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py PREFIX (reads PREFIX.json, writes PREFIX.md and PREFIX.svg)")
    prefix = sys.argv[1]
    with open(prefix + ".json") as f:
        report = json.load(f)
    with open(prefix + ".md", "w") as f:
        f.write(markdown(report))
    with open(prefix + ".svg", "w") as f:
        f.write(svg(report))


if __name__ == "__main__":
    main()
