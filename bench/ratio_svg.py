"""Horizontal bars of speed ratios on a logarithmic axis, as the benchmarks' reports draw
them (bench/torch/report.py against Inductor, bench/onnx/run.py against onnxruntime):
one bar per row, drawn from the line at 1 (as fast as the peer), right and green when
Stitch is faster, left and red when slower; a row without a ratio says why."""

import html
import math


def ticks(lo, hi):
    """Tick values within [lo, hi], at most eleven: quarters near 1 where the range is
    narrow, else powers of two, else of ten."""
    fine = [0.5, 0.75, 1, 1.25, 1.5, 2]
    ladders = ([2.0 ** k for k in range(-10, -1)] + fine + [3.0, 4.0, 6.0, 8.0],
               [2.0 ** k for k in range(-10, 11)], [10.0 ** k for k in range(-4, 5)])
    for ladder in ladders:
        found = [t for t in ladder if lo <= t <= hi]
        if len(found) <= 11 and ladder[0] <= lo and ladder[-1] >= hi:
            return found
    return found


def ratio_bars(title, subtitle, rows, axis_note):
    """rows: (label, ratio or None, why) triples; ratio = peer time / Stitch time."""
    label_w, plot_w, row_h, top, bottom = 300, 520, 22, 60, 50
    ratios = [r for _, r, _ in rows if r is not None]
    lo, hi = min([0.5] + ratios) / 1.15, max([2.0] + ratios) * 1.15
    height = top + row_h * len(rows) + bottom

    def x(v):
        return label_w + plot_w * math.log(v / lo) / math.log(hi / lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 40}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="10" y="20" font-size="14">{html.escape(title)}</text>',
           f'<text x="10" y="38" fill="#555">{html.escape(subtitle)}</text>']
    axis_y = top + row_h * len(rows)
    for t in ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#ddd"/>')
        out.append(f'<text x="{x(t):.1f}" y="{axis_y + 16}" text-anchor="middle">{t:.3g}</text>')
    one = x(1.0)
    for i, (label, v, why) in enumerate(rows):
        y = top + i * row_h
        text_y = f"{y + row_h * 0.7:.1f}"
        out.append(f'<text x="{label_w - 8}" y="{text_y}" text-anchor="end">{html.escape(label)}</text>')
        if v is not None:
            left, right = sorted((one, x(v)))
            colour = "#3a7d44" if v >= 1 else "#c8553d"
            out.append(f'<rect x="{left:.1f}" y="{y + 4}" width="{right - left:.1f}" height="{row_h - 8}" '
                       f'fill="{colour}"/>')
            anchor, at = ("start", right + 4) if v >= 1 else ("end", left - 4)
            out.append(f'<text x="{at:.1f}" y="{text_y}" text-anchor="{anchor}">{v:.2f}</text>')
        else:
            out.append(f'<text x="{label_w + 4}" y="{text_y}" fill="#c8553d">{html.escape((why or "no time")[:80])}</text>')
    out.append(f'<line x1="{one:.1f}" y1="{top - 4}" x2="{one:.1f}" y2="{axis_y}" stroke="black" '
               'stroke-dasharray="4 3"/>')
    out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" stroke="black"/>')
    out.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{axis_y + 36}" text-anchor="middle">'
               f'{html.escape(axis_note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
