#!/usr/bin/env python3
"""Combine a `stitch bench --json` run and a run_peers.py run into one table and chart.

    python3 bench/peers/combine.py --stitch STITCH.json [--peers PEERS.json] --out PREFIX

writes PREFIX.json (both inputs and the merged per-workload rows), PREFIX.md (a
Markdown table per group: the memory-bound corpus, then the Triton sweeps) and
PREFIX.svg (fraction of copy per workload per series, drawn with the standard
library only). Ratios are effective-bandwidth ratios, stitch GB/s over the
other's GB/s on the same bytes: above 1 means stitch is faster.
docs/gpu-benchmarks.md says how to read them.
"""

import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

PLANNERS = ("none", "xla", "stitch")
RATIO_TO = ("xla", "torch_compile", "jax_jit")
# Below this fraction of the best peer's speed a workload is listed as a loss.
LOSS_THRESHOLD = 0.9
SWEEP_PREFIX = "triton_"
COLOURS = {"none": "#9e9e9e", "xla": "#1f77b4", "stitch": "#2ca02c", "torch_eager": "#ff7f0e",
           "torch_compile": "#d62728", "torch_compile_max_autotune": "#8c564b", "jax_jit": "#9467bd"}
EXTRA_COLOURS = ("#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


def load(path, key, what):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("results")
    if not isinstance(rows, list) or any(key not in r for r in rows if "workload" in r):
        sys.exit(f"combine: {path}: not {what} (needs a 'results' list whose rows have '{key}')")
    return doc


def merge(stitch_doc, peers_doc):
    """{workload: merged row}, corpus workloads first in the stitch run's order."""
    table = {}

    def row(name):
        return table.setdefault(name, {"workload": name, "bytes_min": None, "series": {},
                                       "stitch_copy_gbps": None, "peers_copy_gbps": None})

    for r in stitch_doc["results"]:
        if r.get("planner") not in PLANNERS or "workload" not in r:
            continue
        m = row(r["workload"])
        m["bytes_min"] = m["bytes_min"] or r.get("bytes_min")
        m["stitch_copy_gbps"] = m["stitch_copy_gbps"] or r.get("copy_gbps")
        m["series"][r["planner"]] = {k: r.get(k) for k in
                                     ("median_s", "gbps", "fraction_of_copy", "kernels", "fallback")}
    for u in stitch_doc.get("unsupported", []):
        if u.get("planner") in PLANNERS and "workload" in u:
            row(u["workload"])["series"][u["planner"]] = {"error": "unsupported: " + u.get("reason", "")}
    for r in peers_doc["results"]:
        if "workload" not in r:
            continue
        m = row(r["workload"])
        m["bytes_min"] = m["bytes_min"] or r.get("bytes_min")
        m["peers_copy_gbps"] = m["peers_copy_gbps"] or r.get("copy_gbps")
        keys = ("error",) if "error" in r else ("median_s", "gbps", "fraction_of_copy", "mode", "timer")
        m["series"][r["peer"]] = {k: r.get(k) for k in keys}
    peers = list(dict.fromkeys(r["peer"] for r in peers_doc["results"] if "peer" in r))
    for m in table.values():
        m["ratios"] = ratios(m, peers)
    return table, peers


def gbps(series, name):
    s = series.get(name) or {}
    return s.get("gbps") if not s.get("error") and s.get("gbps") else None


def ratios(m, peers):
    """stitch GB/s over each comparison's GB/s; None where either side is missing."""
    own = gbps(m["series"], "stitch")
    out = {}
    for other in RATIO_TO:
        theirs = gbps(m["series"], other)
        out[other] = own / theirs if own and theirs else None
    best = max(((gbps(m["series"], p) or 0, p) for p in peers), default=(0, None))
    m["best_peer"] = best[1] if best[0] else None
    out["best_peer"] = own / best[0] if own and best[0] else None
    return out


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def groups(table):
    corpus = [m for name, m in table.items() if not name.startswith(SWEEP_PREFIX)]
    sweep = [m for name, m in table.items() if name.startswith(SWEEP_PREFIX)]
    return [("Memory-bound corpus (bench/workloads)", corpus), ("Triton tutorial sweeps", sweep)]


# --- Markdown -----------------------------------------------------------------

def _num(v, fmt="{:.2f}"):
    return fmt.format(v) if isinstance(v, (int, float)) else "—"


def _cell(series, name):
    s = series.get(name)
    if s is None:
        return "—"
    if s.get("error"):
        return "err"
    text = _num(s.get("fraction_of_copy"))
    return text + "*" if s.get("fallback") else text


def _bytes(n):
    return f"{n / 1048576:.1f} MiB" if n else "—"


def markdown(stitch_doc, peers_doc, table, peers):
    series = [p for p in PLANNERS] + peers
    ratio_cols = [f"stitch/{r}" for r in RATIO_TO] + ["stitch/best peer"]
    dev = stitch_doc.get("device") or {}
    pm = peers_doc.get("machine") or {}
    lines = [f"# Stitch vs peers ({stitch_doc.get('backend', '?')} / {peers_doc.get('backend', '?')})", "",
             f"- Stitch: `stitch bench` back end `{stitch_doc.get('backend', '?')}` on "
             f"{dev.get('name', '?')} (arch {dev.get('arch', '?')}, driver {dev.get('driver', '?')}), "
             f"{(stitch_doc.get('machine') or {}).get('date', '?')}, repeat {stitch_doc.get('repeat', '?')}.",
             (f"- Peers: run_peers.py on {pm.get('gpu', pm.get('cpu', '?'))} (driver {pm.get('driver', '?')}), "
              f"torch {pm.get('torch', '?')}, triton {pm.get('triton', '?')}, jax {pm.get('jax', '—')}, "
              f"CUDA {pm.get('cuda', '?')}, {pm.get('date', '?')}, repeat {peers_doc.get('repeat', '?')}, "
              f"timers {json.dumps(peers_doc.get('timers', {}))}." if peers else "- Peers: none in this run."),
             "- Series cells: fraction of the D2D copy bandwidth measured on the same footprint in the "
             "same run (the stitch planners against the stitch run's copy, the peers against the peers' "
             "copy). `*`: the row ran a fallback; `err`: failed or unsupported; `—`: not run.",
             "- Ratios: stitch GB/s over the other's GB/s (same bytes); above 1 stitch is faster.", ""]
    if peers and peers_doc.get("complete") is False:
        lines += ["**The peers' run stopped before its last workload (a time limit): peer cells "
                  "of the workloads it did not reach are `—`.**", ""]
    if dev.get("name") and pm.get("gpu") and dev["name"] != pm["gpu"]:
        lines += [f"**Warning: the two runs are on different GPUs ({dev['name']} vs {pm['gpu']}); "
                  "compare fractions of copy, not ratios.**", ""]
    summary = []
    for title, rows in groups(table):
        if not rows:
            continue
        lines += [f"## {title}", "",
                  "| workload | bytes | copy GB/s (stitch / peers) | " + " | ".join(series) + " | "
                  + " | ".join(ratio_cols) + " |",
                  "| --- | ---: | ---: | " + " | ".join("---:" for _ in series) + " | "
                  + " | ".join("---:" for _ in ratio_cols) + " |"]
        for m in rows:
            r = m["ratios"]
            copy = f"{_num(m['stitch_copy_gbps'], '{:.0f}')} / {_num(m['peers_copy_gbps'], '{:.0f}')}"
            lines.append(f"| {m['workload']} | {_bytes(m['bytes_min'])} | {copy} | "
                         + " | ".join(_cell(m["series"], s) for s in series) + " | "
                         + " | ".join(_num(r[k], "{:.2f}×") for k in (*RATIO_TO, "best_peer")) + " |")
        means = {k: geomean([m["ratios"][k] for m in rows]) for k in (*RATIO_TO, "best_peer")}
        counts = {k: sum(1 for m in rows if m["ratios"][k]) for k in means}
        lines += ["", "Geometric means of the ratios over this group: "
                  + ", ".join(f"stitch/{k.replace('_', ' ') if k == 'best_peer' else k} "
                              f"{_num(v, '{:.2f}×')} (n={counts[k]})" for k, v in means.items()) + ".", ""]
        losses = [m for m in rows if m["ratios"]["best_peer"] and m["ratios"]["best_peer"] < LOSS_THRESHOLD]
        listed = ", ".join(f"{m['workload']} ({m['ratios']['best_peer']:.2f}× of {m['best_peer']})"
                           for m in losses) or "none"
        lines.append(f"Workloads where stitch is below {LOSS_THRESHOLD}× the best peer: "
                     + (listed if peers else "no peer results") + ".")
        lines.append("")
        summary.append({"group": title, "geomean": means, "n": counts,
                        "below_threshold": [m["workload"] for m in losses]})
    errors = [(m["workload"], name, s["error"]) for m in table.values()
              for name, s in m["series"].items() if s.get("error")]
    if errors:
        lines += ["## Errors", ""] + [f"- {w} / {n}: {e.splitlines()[0][:200]}" for w, n, e in errors] + [""]
    return "\n".join(lines), summary


# --- SVG ----------------------------------------------------------------------

BAR = 9
GAP = 14
PLOT_H = 320
LEFT, TOP, BOTTOM, RIGHT = 64, 70, 190, 190


def chart(table, series, title, subtitle):
    colours = dict(COLOURS)
    for i, s in enumerate(x for x in series if x not in colours):
        colours[s] = EXTRA_COLOURS[i % len(EXTRA_COLOURS)]
    names = list(table)
    group_w = len(series) * BAR + GAP
    width = LEFT + max(1, len(names)) * group_w + RIGHT
    height = TOP + PLOT_H + BOTTOM
    values = [s.get("fraction_of_copy") for m in table.values() for s in m["series"].values()]
    peak = max([1.0] + [v for v in values if isinstance(v, (int, float))])
    top = math.ceil(peak * 4) / 4

    def y(v):
        return TOP + PLOT_H * (1 - v / top)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="24" font-size="15">{escape(title)}</text>',
           f'<text x="{LEFT}" y="44" fill="#555">{escape(subtitle)}</text>',
           f'<text transform="translate(18,{TOP + PLOT_H / 2}) rotate(-90)" text-anchor="middle">'
           'fraction of copy bandwidth</text>']
    for i in range(int(round(top / 0.25)) + 1):
        v = i * 0.25
        colour = "#000" if v == 1.0 else "#ddd"
        svg.append(f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{colour}"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    for gi, name in enumerate(names):
        x0 = LEFT + GAP / 2 + gi * group_w
        if gi and name.startswith(SWEEP_PREFIX) and not names[gi - 1].startswith(SWEEP_PREFIX):
            sep = x0 - GAP / 2
            svg.append(f'<line x1="{sep:.1f}" x2="{sep:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}" '
                       'stroke="#888" stroke-dasharray="4,3"/>')
        for si, s in enumerate(series):
            entry = table[name]["series"].get(s) or {}
            v = entry.get("fraction_of_copy")
            if not isinstance(v, (int, float)):
                continue
            svg.append(f'<rect x="{x0 + si * BAR:.1f}" y="{y(v):.1f}" width="{BAR - 1}" '
                       f'height="{TOP + PLOT_H - y(v):.1f}" fill="{colours[s]}">'
                       f'<title>{escape(name)} {escape(s)}: {v:.3f}</title></rect>')
        svg.append(f'<text transform="translate({x0 + len(series) * BAR / 2:.1f},{TOP + PLOT_H + 10}) '
                   f'rotate(45)">{escape(name)}</text>')
    for si, s in enumerate(series):
        lx, ly = width - RIGHT + 16, TOP + 10 + si * 18
        svg.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colours[s]}"/>')
        svg.append(f'<text x="{lx + 18}" y="{ly + 10}">{escape(s)}</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stitch", required=True, help="a `stitch bench --json` file (backend cuda)")
    p.add_argument("--peers", help="a run_peers.py --json file (without it: the stitch planners alone)")
    p.add_argument("--out", required=True, help="output prefix: writes PREFIX.json, PREFIX.md, PREFIX.svg")
    args = p.parse_args(argv)
    stitch_doc = load(args.stitch, "planner", "a stitch bench --json file")
    peers_doc = (load(args.peers, "peer", "a run_peers.py --json file") if args.peers
                 else {"results": [], "backend": stitch_doc.get("backend"), "note": "no peers run"})
    if stitch_doc.get("backend") != "cuda" or peers_doc.get("backend") != "cuda":
        print(f"combine: note: back ends are stitch={stitch_doc.get('backend')} "
              f"peers={peers_doc.get('backend')}, not both cuda", file=sys.stderr)
    table, peers = merge(stitch_doc, peers_doc)
    if not table:
        sys.exit("combine: no rows in either input")
    md, summary = markdown(stitch_doc, peers_doc, table, peers)
    series = [s for s in (*PLANNERS, *peers) if any(s in m["series"] for m in table.values())]
    dev = stitch_doc.get("device") or {}
    subtitle = " | ".join(str(x) for x in (
        dev.get("name") or (peers_doc.get("machine") or {}).get("gpu", "?"),
        f"stitch {stitch_doc.get('backend', '?')} {(stitch_doc.get('machine') or {}).get('date', '?')}",
        f"peers {(peers_doc.get('machine') or {}).get('date', '?')}",
        "dashed line: Triton sweeps follow"))
    svg = chart(table, series, "Stitch planners and peers: fraction of D2D copy bandwidth", subtitle)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    merged = {"ratio_definition": "stitch gbps / other gbps on the same bytes_min; > 1: stitch faster",
              "summary": summary, "rows": list(table.values()),
              "stitch": stitch_doc, "peers": peers_doc}
    for ext, text in ((".json", json.dumps(merged, indent=1) + "\n"), (".md", md), (".svg", svg)):
        with open(args.out + ext, "w") as f:
            f.write(text)
    print(f"combine: wrote {args.out}.json, {args.out}.md, {args.out}.svg ({len(table)} workloads)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
