"""bench/torch/run.py's report: the Markdown table and the SVG plot of Stitch against
Inductor, both from the JSON report the run writes (so either can be redrawn from it:
`python3 bench/torch/report.py PREFIX`)."""

import html
import json
import math
import sys

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
        return "no measurement (profiled products above the median)"
    return (f"{r['inductor_rest_s'] * 1e3:.2f} / {r['stitch_rest_s'] * 1e3:.2f} "
            f"({_ratio(r, 'stitch_rest_vs_inductor')})")


def row(r):
    """One model, dtype and mode: the table's row."""
    return (f"| {r['model']} | {r['dtype']} | {MODE_NAMES[r['mode']]} | {_ms(r, 'eager')} | {_ms(r, 'inductor')} | "
            f"{_ms(r, 'stitch')} | {_ratio(r, 'stitch_vs_inductor')} | {_ratio(r, 'stitch_vs_eager')} | "
            f"{_rest(r)} | {_difference(r)} | {_kernels(r)} |")


def markdown(report):
    m = report["machine"]
    results = report["results"]
    lines = [f"# torch.compile on the model set: eager, Inductor and Stitch ({report['date']})", "",
             f"Machine: {m['cpu']}, {m['cpus']} CPUs, torch {m['torch']} ({m['threads']} threads), "
             f"Python {m['python']}. Command: `{report['command']}`. Method: the docstring of bench/torch/run.py "
             f"(medians of {report['repeat']} interleaved rounds after {report['warmup']} warm-up rounds; "
             "a training step is zeroing the gradients, forward, loss and backward).", "",
             "Stitch vs Inductor: Inductor's time over Stitch's (above 1: Stitch faster). Max diff vs eager: "
             "inference, the output's max |difference|; training, the largest over the loss and the gradients of "
             "max |difference| over eager's max |value| (where above 1). Kernels: Inductor's generated kernels / "
             "Stitch's kernels (partitions), forward and backward together. Rest: the time outside matrix "
             "products and attention (the median less those ops' self time under torch.profiler; a Stitch dot "
             "or attention inside a partition counts as rest), and Inductor's rest over Stitch's.", ""]
    sizes = {}
    for r in results:
        sizes.setdefault(r["model"], r["size"])
    lines += [f"- {name}: {size}" for name, size in sizes.items()] + [""]
    lines += ["| model | dtype | mode | eager ms | Inductor ms | Stitch ms | Stitch vs Inductor | Stitch vs eager "
              "| rest ms Inductor / Stitch | max diff vs eager Inductor / Stitch | kernels Inductor / Stitch |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
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


def _ticks(lo, hi):
    """Tick values within [lo, hi], at most eleven: quarters near 1 where the range is
    narrow, else powers of two, else of ten."""
    fine = [0.5, 0.75, 1, 1.25, 1.5, 2]
    ladders = ([2.0 ** k for k in range(-10, -1)] + fine + [3.0, 4.0, 6.0, 8.0],
               [2.0 ** k for k in range(-10, 11)], [10.0 ** k for k in range(-4, 5)])
    for ladder in ladders:
        ticks = [t for t in ladder if lo <= t <= hi]
        if len(ticks) <= 11 and ladder[0] <= lo and ladder[-1] >= hi:
            return ticks
    return ticks


def svg(report):
    """Horizontal bars, one per model, dtype and mode: Inductor's time over Stitch's on a
    logarithmic axis, each bar drawn from the line at 1 (as fast as Inductor), right when
    Stitch is faster; a row without both times says why."""
    rows = report["results"]
    label_w, plot_w, row_h, top, bottom = 300, 520, 22, 60, 50
    ratios = [r["stitch_vs_inductor"] for r in rows if "stitch_vs_inductor" in r]
    lo, hi = min([0.5] + ratios) / 1.15, max([2.0] + ratios) * 1.15
    height = top + row_h * len(rows) + bottom

    def x(v):
        return label_w + plot_w * math.log(v / lo) / math.log(hi / lo)

    m = report["machine"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 40}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14">Stitch vs Inductor (Inductor time / Stitch time), '
           f'{html.escape(report["date"])}</text>',
           f'<text x="10" y="38" fill="#555">{html.escape(m["cpu"])}, torch {html.escape(m["torch"])}, '
           f'{m["threads"]} threads</text>']
    axis_y = top + row_h * len(rows)
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:.3g}</text>')
    one = x(1.0)
    for i, r in enumerate(rows):
        y = top + i * row_h
        text_y = f"{y + row_h * 0.7:.1f}"
        label = f"{r['model']} {r['dtype']} {MODE_NAMES[r['mode']]}"
        out.append(f'<text x="{label_w - 8}" y="{text_y}" text-anchor="end">{html.escape(label)}</text>')
        if "stitch_vs_inductor" in r:
            v = r["stitch_vs_inductor"]
            left, right = sorted((one, x(v)))
            colour = "#3a7d44" if v >= 1 else "#c8553d"
            out.append(f'<rect x="{left:.1f}" y="{y + 4}" width="{right - left:.1f}" height="{row_h - 8}" '
                       f'fill="{colour}"/>')
            anchor, at = ("start", right + 4) if v >= 1 else ("end", left - 4)
            out.append(f'<text x="{at:.1f}" y="{text_y}" text-anchor="{anchor}">{v:.2f}</text>')
        else:
            why = next((r[k] for k in ("stitch_error", "inductor_error", "eager_error") if k in r), "no time")
            out.append(f'<text x="{label_w + 4}" y="{text_y}" fill="#c8553d">{html.escape(why[:80])}</text>')
    out.append(f'<line x1="{one:.1f}" y1="{top - 4}" x2="{one:.1f}" y2="{axis_y}" stroke="black" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" stroke="black"/>')
    out.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{axis_y + 36}" text-anchor="middle">'
               'logarithmic; right of 1: Stitch faster than Inductor</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


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
