#!/usr/bin/env python3
"""Bar chart of a `stitch bench` JSON file (docs/benchmarks.md) as SVG.

For each workload, one bar per planner (none, xla, and the hand-written
reference when the results hold one): the fraction of the copy bandwidth
measured on that workload's own byte footprint in the same run. Standard
library only, so it runs wherever python3 does.

    scripts/plot_bench.py bench/results/cpu-DATE.json [-o bench/results/cpu-DATE.svg]
"""

import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

SERIES = [("none", "#9e9e9e"), ("xla", "#1f77b4"), ("stitch", "#2ca02c"), ("reference", "#ff7f0e")]

BAR_WIDTH = 14
GROUP_GAP = 18
PLOT_HEIGHT = 320
MARGIN_LEFT = 64
MARGIN_TOP = 70
MARGIN_BOTTOM = 170
MARGIN_RIGHT = 150


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc.get("results"), list):
        sys.exit(f"plot_bench: {path}: no 'results' list; is this a `stitch bench --json` file?")
    return doc


def fractions(doc):
    """{workload: {planner: fraction_of_copy}}, workloads in first-seen order."""
    table = {}
    for row in doc["results"]:
        fraction = row.get("fraction_of_copy")
        if fraction is None or "workload" not in row or "planner" not in row:
            continue
        # bench.sh --peers adds stitch bench's other series (docs/benchmarks.md, Peers).
        if row.get("outputs") == "fresh" or row.get("allocator", "default") != "default":
            continue
        table.setdefault(row["workload"], {})[row["planner"]] = float(fraction)
    return table


def svg(doc, table):
    series = [(name, colour) for name, colour in SERIES if any(name in v for v in table.values())]
    group_width = max(1, len(series)) * BAR_WIDTH + GROUP_GAP
    width = MARGIN_LEFT + len(table) * group_width + MARGIN_RIGHT
    height = MARGIN_TOP + PLOT_HEIGHT + MARGIN_BOTTOM
    top = max([1.0] + [f for v in table.values() for f in v.values()])
    top = (int(top * 4) + 1) / 4 if top > 1.0 else 1.0

    def y(value):
        return MARGIN_TOP + PLOT_HEIGHT * (1 - value / top)

    machine = doc.get("machine", {})
    title = "stitch bench ({} back end): fraction of copy bandwidth".format(doc.get("backend", "?"))
    subtitle = "{} | {} cores | {} | {} | copy {:.1f} GB/s (median over workloads)".format(
        machine.get("cpu", "?"), machine.get("cores", "?"), machine.get("compiler", "?"),
        machine.get("date", "?"), float(doc.get("copy_gbps", 0)))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{MARGIN_LEFT}" y="24" font-size="15">{escape(title)}</text>',
        f'<text x="{MARGIN_LEFT}" y="44" fill="#555">{escape(subtitle)}</text>',
    ]
    steps = int(round(top / 0.25))
    for i in range(steps + 1):
        value = i * 0.25
        out.append(f'<line x1="{MARGIN_LEFT}" x2="{width - MARGIN_RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
                   f'stroke="{"#000" if value == 1.0 else "#ddd"}" stroke-width="1"/>')
        out.append(f'<text x="{MARGIN_LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.2f}</text>')
    out.append(f'<text transform="translate(16,{MARGIN_TOP + PLOT_HEIGHT / 2}) rotate(-90)" '
               f'text-anchor="middle">fraction of copy bandwidth</text>')
    for gi, (workload, values) in enumerate(table.items()):
        x0 = MARGIN_LEFT + GROUP_GAP / 2 + gi * group_width
        for si, (name, colour) in enumerate(series):
            if name not in values:
                continue
            value = values[name]
            x = x0 + si * BAR_WIDTH
            out.append(f'<rect x="{x:.1f}" y="{y(value):.1f}" width="{BAR_WIDTH - 2}" '
                       f'height="{MARGIN_TOP + PLOT_HEIGHT - y(value):.1f}" fill="{colour}">'
                       f'<title>{escape(workload)} {name}: {value:.3f}</title></rect>')
        label_x = x0 + len(series) * BAR_WIDTH / 2
        label_y = MARGIN_TOP + PLOT_HEIGHT + 10
        out.append(f'<text transform="translate({label_x:.1f},{label_y}) rotate(45)">{escape(workload)}</text>')
    for si, (name, colour) in enumerate(series):
        ly = MARGIN_TOP + 10 + si * 18
        lx = width - MARGIN_RIGHT + 16
        out.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{lx + 18}" y="{ly + 10}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a stitch bench --json file")
    parser.add_argument("-o", "--output", help="SVG to write (default: the results path with .svg)")
    args = parser.parse_args()
    doc = load(args.results)
    table = fractions(doc)
    if not table:
        sys.exit(f"plot_bench: {args.results}: no result has a fraction_of_copy")
    output = args.output or os.path.splitext(args.results)[0] + ".svg"
    with open(output, "w") as f:
        f.write(svg(doc, table))
    print(f"plot_bench: wrote {output}")


if __name__ == "__main__":
    main()
