#!/usr/bin/env python3
"""The CPU comparison with the peers (docs/benchmarks.md, Peers).

`scripts/bench.sh --peers` runs, in alternating rounds, `stitch bench` (outputs
reused), `stitch bench --fresh-outputs`, `stitch bench` under jemalloc, and
run_peers.py with the default allocator, with the default allocator and torch's
opt-in huge pages (THP_MEM_ALLOC_ENABLE=1; the torch peers only), and under
jemalloc. This script takes
the median over the rounds of each (workload, series) and writes the results.

    python3 bench/peers/combine_cpu.py median OUT.json STITCH_ROUND.json...
        one `stitch bench --json` document whose rows' times are the medians over
        the rounds (the rounds must time the same workloads and planners)
    python3 bench/peers/combine_cpu.py table --results RESULTS.json --out PREFIX
        [--stitch-fresh R.json...] [--stitch-jemalloc R.json...]
        [--peers-default R.json...] [--peers-thp R.json...] [--peers-jemalloc R.json...]
        [--skipped REASON]
        adds the other series' rows and the comparison to RESULTS.json (whose
        rows are the `median` of the reused stitch rounds, plus any reference
        rows) and writes PREFIX.md (the table) and PREFIX-peers.svg (the ratios)

Ratios are peer time over stitch time on the same workload: above 1 stitch is
faster. The two like-for-like comparisons:
  fresh:  `stitch bench --fresh-outputs` against the best peer with the C
          library's malloc, as it runs by default or, for torch, with its
          opt-in huge pages, whichever is faster; both allocate every call's
          outputs (Stitch maps 4 MiB or more on huge pages itself).
  reused: `stitch bench` (outputs reused) under jemalloc against the best peer
          under jemalloc, which hands a freed output's pages to the next call.
Standard library only.
"""

import argparse
import json
import math
import statistics
import sys
from xml.sax.saxutils import escape

import combine

SWEEP_PREFIX = "triton_"
PEERS = ("torch_eager", "torch_compile", "torch_compile_max_autotune", "jax_jit")
COMPARISONS = {
    "fresh": "stitch --fresh-outputs vs the best peer, both with their default allocator (the peers: glibc "
             "malloc; stitch: its own huge-page mappings from 4 MiB, jemalloc below; and, where faster, torch's "
             "opt-in huge pages)",
    "reused": "stitch, outputs reused, vs the best peer, both under jemalloc (LD_PRELOAD)",
}
COLOURS = {"fresh": "#ff7f0e", "reused": "#2ca02c"}
# The peers' series: the default allocator, the same with torch's opt-in huge
# pages (THP_MEM_ALLOC_ENABLE=1; torch peers only), and jemalloc.
PEER_ALLOCATORS = ("default", "thp", "jemalloc")
ALLOCATOR_SUFFIX = {"default": "", "thp": ", huge pages", "jemalloc": ", jemalloc"}


def load(path):
    """A `stitch bench --json` or run_peers.py document (combine.py's reader)."""
    return combine.load(path, "workload", "a stitch bench or run_peers.py results file")


def median_by(docs, key):
    """{(workload, key value): [median_s of each round]} over the rows without an error."""
    times = {}
    for doc in docs:
        for r in doc["results"]:
            if r.get("median_s") and not r.get("error") and key in r:
                times.setdefault((r["workload"], r[key]), []).append(r["median_s"])
    return times


# --- median over rounds of the stitch runs ------------------------------------

def median_stitch(docs):
    """The first round's document with each row's times the medians over the rounds."""
    doc = docs[0]
    times = median_by(docs, "planner")
    copies = {}
    for d in docs:
        for r in d["results"]:
            if r.get("copy_gbps"):
                copies.setdefault((r["workload"], r["planner"]), []).append(r["copy_gbps"])
    for r in doc["results"]:
        k = (r["workload"], r["planner"])
        rounds = times[k]
        r["median_s"] = statistics.median(rounds)
        r["rounds_median_s"] = rounds
        r["copy_gbps"] = statistics.median(copies[k])
        r["gbps"] = r["bytes_min"] / r["median_s"] / 1e9
        r["fraction_of_copy"] = r["gbps"] / r["copy_gbps"]
        if "plan_bytes" in r:
            r["plan_gbps"] = r["plan_bytes"] / r["median_s"] / 1e9
            r["plan_fraction_of_copy"] = r["plan_gbps"] / r["copy_gbps"]
        r.setdefault("allocator", "default")
    doc["copy_gbps"] = statistics.median(d["copy_gbps"] for d in docs)
    doc["rounds"] = len(docs)
    return doc


# --- the comparison -----------------------------------------------------------

def series_rows(docs, key, allocator, **fields):
    """One results row per (workload, series) of these rounds: the median of the rounds."""
    if not docs:
        return []
    rows = []
    times = median_by(docs, key)
    first = {}
    for d in docs:
        for r in d["results"]:
            first.setdefault((r["workload"], r.get(key)), r)
    for (workload, name), r in first.items():
        row = {"workload": workload, key: name, "allocator": allocator, **fields,
               "bytes_min": r.get("bytes_min")}
        for extra in ("kernels", "fallback", "mode", "timer", "first_call_s"):
            if extra in r:
                row[extra] = r[extra]
        rounds = times.get((workload, name))
        if not rounds:
            row["error"] = r.get("error", "no time")
        else:
            row["median_s"] = statistics.median(rounds)
            row["rounds_median_s"] = rounds
            if row["bytes_min"]:
                row["gbps"] = row["bytes_min"] / row["median_s"] / 1e9
        rows.append(row)
    return rows


def failed_checks(peer_docs):
    """{(workload, peer): reason} for every peer that failed the float64 check."""
    failed = {}
    for d in peer_docs:
        for c in d.get("check", []):
            if not c.get("ok"):
                failed[(c["workload"], c["peer"])] = c.get("error") or f"relative error {c.get('rel_error'):.1e}"
    return failed


def row_of(rows, workload, **match):
    for r in rows:
        if r["workload"] == workload and all(r.get(k) == v for k, v in match.items()):
            return r
    return {}


def time_of(rows, workload, **match):
    return row_of(rows, workload, **match).get("median_s")


def best_peer(rows, workload, allocators, failed):
    """(peer, seconds) of the fastest peer, under any of these allocators, that ran and passed the check."""
    best = (None, None)
    for peer in PEERS:
        for allocator in allocators:
            t = time_of(rows, workload, peer=peer, allocator=allocator)
            if t and (workload, peer) not in failed and (best[1] is None or t < best[1]):
                best = (peer + (", huge pages" if allocator == "thp" else ""), t)
    return best


# A peer faster than this many copies of the workload's minimal bytes did not
# do the work (torch.compile turns babelstream_copy's `a + 0.0` into returning
# `a`): it never counts as the best peer.
IMPLAUSIBLE_COPIES = 3.0


def implausible_peers(results):
    """{(workload, peer): reason} for every peer row faster than IMPLAUSIBLE_COPIES x the copy of its footprint."""
    failed = {}
    for r in results:
        if not r.get("peer") or not r.get("median_s"):
            continue
        own = row_of(results, r["workload"], planner="stitch", outputs="reused", allocator="default")
        bytes_min, copy_gbps = own.get("bytes_min"), own.get("copy_gbps")
        if bytes_min and copy_gbps and bytes_min / r["median_s"] / 1e9 > IMPLAUSIBLE_COPIES * copy_gbps:
            failed[(r["workload"], r["peer"])] = (
                f"{bytes_min / r['median_s'] / 1e9:.0f} GB/s, over {IMPLAUSIBLE_COPIES:.0f}x the copy of its "
                f"footprint ({copy_gbps:.1f} GB/s): it did not do the work")
    return failed


def comparison(results, failed):
    """Per workload: each series' time, the best peer per allocator and the two ratios."""
    workloads = list(dict.fromkeys(r["workload"] for r in results if "workload" in r))
    peers = [p for p in PEERS if any(r.get("peer") == p for r in results)]
    table = []
    for w in workloads:
        m = {"workload": w,
             "stitch_reused_s": time_of(results, w, planner="stitch", outputs="reused", allocator="default"),
             "stitch_fresh_s": time_of(results, w, planner="stitch", outputs="fresh", allocator="default"),
             "stitch_reused_jemalloc_s": time_of(results, w, planner="stitch", outputs="reused",
                                                 allocator="jemalloc"),
             "xla_reused_s": time_of(results, w, planner="xla", outputs="reused", allocator="default"),
             "stitch_fallback": row_of(results, w, planner="stitch", outputs="reused").get("fallback") or "",
             "peers_s": {f"{p}/{a}": time_of(results, w, peer=p, allocator=a)
                         for p in peers for a in PEER_ALLOCATORS}}
        for name, stitch_key, allocators in (("fresh", "stitch_fresh_s", ("default", "thp")),
                                             ("reused", "stitch_reused_jemalloc_s", ("jemalloc",))):
            peer, t = best_peer(results, w, allocators, failed)
            own = m[stitch_key]
            m[name] = {"best_peer": peer, "best_peer_s": t, "stitch_s": own,
                       "ratio": t / own if t and own else None}
        table.append(m)
    return table, peers


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def groups(table):
    corpus = [m for m in table if not m["workload"].startswith(SWEEP_PREFIX)]
    sweeps = [m for m in table if m["workload"].startswith(SWEEP_PREFIX)]
    both = [("all", "all", table)] if corpus and sweeps else []
    return [g for g in [("corpus", "corpus (bench/workloads)", corpus),
                        ("sweeps", "Triton tutorial sweeps", sweeps)] + both if g[2]]


def summary(table):
    out = []
    for short, title, rows in groups(table):
        entry = {"group": short, "title": title}
        for name in COMPARISONS:
            ratios = [m[name]["ratio"] for m in rows if m[name]["ratio"]]
            entry[name] = {"geomean": geomean(ratios), "n": len(ratios)}
        out.append(entry)
    return out


# --- Markdown -----------------------------------------------------------------

def _ms(t):
    return f"{t * 1e3:.2f}" if t else "—"


def _ratio(v):
    return f"{v:.2f}×" if v else "—"


def markdown(doc, peers_info, table, peers, failed, totals):
    machine = doc.get("machine", {})
    pm = peers_info.get("machine") or {}
    lines = [f"# CPU: Stitch and its peers ({machine.get('date', '?')[:10]})", "",
             f"- Machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores; "
             f"{machine.get('compiler', '?')}, `{machine.get('compiler_flags', '')}`.",
             (f"- Peers: torch {pm.get('torch', '—')} ({pm.get('torch_threads', '?')} threads), "
              f"jax {pm.get('jax', '—')}, numpy {pm.get('numpy', '—')}, python {pm.get('python', '—')}."
              if pm else "- Peers: none ran."),
             f"- jemalloc: `{peers_info.get('jemalloc') or 'not found'}`.",
             f"- Rounds: {peers_info['rounds']}, each running every series in turn (`stitch bench` outputs "
             f"reused, `--fresh-outputs`, reused under jemalloc; the peers with the default allocator, "
             f"the torch peers again with their opt-in huge pages (`THP_MEM_ALLOC_ENABLE=1`), and under "
             f"jemalloc); a cell is the median over the rounds of one run's median time "
             f"(repeat {doc.get('repeat', '?')}, warm-up {doc.get('warmup', '?')}).",
             "- Comparisons (ratio = the best peer's time / stitch's time; above 1 stitch is faster):",
             "  - **fresh**: " + COMPARISONS["fresh"] + ": every call allocates and frees its outputs;",
             "  - **reused**: " + COMPARISONS["reused"] + ": stitch writes into the same outputs, the peers'"
             " freed outputs are handed back by jemalloc without new page faults.",
             "- Best peer: the fastest of the peers that ran and passed the float64 check on that workload.", ""]
    if peers_info.get("skipped"):
        lines += [f"**Peers skipped: {peers_info['skipped']}.**", ""]
    if peers_info.get("check_summary"):
        lines += [peers_info["check_summary"], ""]
    cols = ["stitch reused", "stitch fresh", "stitch reused, jemalloc", "xla reused"]
    allocators = [a for a in PEER_ALLOCATORS if any(m["peers_s"].get(f"{p}/{a}") for m in table for p in peers)]
    columns = [(p, a) for p in peers for a in allocators if any(m["peers_s"].get(f"{p}/{a}") for m in table)]
    cols += [f"{p}{ALLOCATOR_SUFFIX[a]}" for p, a in columns]
    lines += ["## Times (ms)", "",
              "| workload | " + " | ".join(cols) + " |",
              "| --- | " + " | ".join("---:" for _ in cols) + " |"]
    for m in table:
        mark = "*" if m["stitch_fallback"] else ""
        cells = [_ms(m[k]) + mark for k in ("stitch_reused_s", "stitch_fresh_s", "stitch_reused_jemalloc_s")]
        cells.append(_ms(m["xla_reused_s"]))
        for p, a in columns:
            cell = _ms(m["peers_s"][f"{p}/{a}"])
            cells.append(cell + " ✗" if (m["workload"], p) in failed else cell)
        lines.append(f"| {m['workload']} | " + " | ".join(cells) + " |")
    if any(m["stitch_fallback"] for m in table):
        lines += ["", "*: the `stitch` planner's plan did not compile; the row timed the fallback (`fallback` "
                  "in the JSON)."]
    if failed:
        lines += ["", "✗: failed the float64 check, or ran faster than 3 copies of its footprint "
                  "(it did not do the work); never the best peer."]
        lines += [f"- {w} / {p}: {why}" for (w, p), why in sorted(failed.items())]
    lines += ["", "## Ratios against the best peer", "",
              "| workload | fresh: best peer (default allocator, or torch's huge pages) | fresh: stitch --fresh-outputs vs it "
              "| reused: best peer (jemalloc) | reused: stitch, outputs reused (jemalloc), vs it |",
              "| --- | --- | ---: | --- | ---: |"]
    def best(c):
        return f"{c['best_peer']} {_ms(c['best_peer_s'])} ms" if c["best_peer"] else "—"

    for m in table:
        f, r = m["fresh"], m["reused"]
        lines.append(f"| {m['workload']} | {best(f)} | {_ratio(f['ratio'])} | {best(r)} | {_ratio(r['ratio'])} |")
    for s in totals:
        lines.append(f"| **geometric mean, {s['title']}** | | **{_ratio(s['fresh']['geomean'])}** "
                     f"(n={s['fresh']['n']}) | | **{_ratio(s['reused']['geomean'])}** (n={s['reused']['n']}) |")
    errors = peers_info.get("errors") or []
    if errors:
        lines += ["", "## Errors", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"


# --- SVG ----------------------------------------------------------------------

BAR, GAP, PLOT_H = 10, 12, 300
LEFT, TOP, BOTTOM, RIGHT = 60, 70, 190, 260
MIN_WIDTH = 760


def chart(table, totals, title, subtitle):
    """Two bars per workload (fresh, reused), log scale around 1.0, geometric means last."""
    groups_ = [(m["workload"], {k: m[k]["ratio"] for k in COMPARISONS}) for m in table]
    groups_ += [(f"geomean {s['group']}", {k: s[k]["geomean"] for k in COMPARISONS})
                for s in totals]
    values = [v for _, g in groups_ for v in g.values() if v]
    lo = 2.0 ** math.floor(math.log2(min(values + [0.5])))
    hi = 2.0 ** math.ceil(math.log2(max(values + [2.0])))
    group_w = 2 * BAR + GAP
    width = max(LEFT + len(groups_) * group_w + RIGHT, MIN_WIDTH)
    height = TOP + PLOT_H + BOTTOM

    def y(v):
        return TOP + PLOT_H * (math.log2(hi) - math.log2(v)) / (math.log2(hi) - math.log2(lo))

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="24" font-size="15">{escape(title)}</text>',
           f'<text x="{LEFT}" y="44" fill="#555">{escape(subtitle)}</text>',
           f'<text transform="translate(16,{TOP + PLOT_H / 2}) rotate(-90)" text-anchor="middle">'
           'best peer time / stitch time (log scale)</text>']
    v = lo
    while v <= hi:
        colour = "#000" if v == 1.0 else "#ddd"
        svg.append(f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{colour}"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}×</text>')
        v *= 2
    for gi, (name, ratios) in enumerate(groups_):
        x0 = LEFT + GAP / 2 + gi * group_w
        if gi == len(table):
            svg.append(f'<line x1="{x0 - GAP / 2:.1f}" x2="{x0 - GAP / 2:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}" '
                       'stroke="#888" stroke-dasharray="4,3"/>')
        for si, (key, value) in enumerate(ratios.items()):
            if not value:
                continue
            top, bottom = sorted((y(value), y(1.0)))
            svg.append(f'<rect x="{x0 + si * BAR:.1f}" y="{top:.1f}" width="{BAR - 1}" '
                       f'height="{max(bottom - top, 0.5):.1f}" fill="{COLOURS[key]}">'
                       f'<title>{escape(name)} {key}: {value:.2f}×</title></rect>')
        svg.append(f'<text transform="translate({x0 + BAR:.1f},{TOP + PLOT_H + 10}) rotate(45)">'
                   f'{escape(name)}</text>')
    for si, (key, text) in enumerate(COMPARISONS.items()):
        lx, ly = width - RIGHT + 14, TOP + 10 + si * 64
        svg.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{COLOURS[key]}"/>')
        svg.append(f'<text x="{lx + 18}" y="{ly + 10}">{key}:</text>')
        words, line = text.split(), ""
        lines_ = []
        for word in words:
            if len(line) + len(word) > 34:
                lines_.append(line)
                line = ""
            line += word + " "
        lines_.append(line)
        for li, part in enumerate(lines_[:3]):
            svg.append(f'<text x="{lx + 18}" y="{ly + 22 + li * 12}" fill="#555" font-size="9">'
                       f'{escape(part.strip())}</text>')
    svg.append("</svg>")
    return "\n".join(svg) + "\n"


# --- command line ---------------------------------------------------------------

def check_summary(peer_docs, failed, excluded):
    checked = [c for d in peer_docs for c in d.get("check", [])]
    if not checked:
        return "The float64 check did not run."
    worst = max((c.get("rel_error") or 0.0) for c in checked if c.get("ok"))
    text = (f"Float64 check (run_peers.py --check, the `_small` graphs against numpy float64): "
            f"{len(checked) - len(failed)} of {len(checked)} peer × workload pairs within tolerance, "
            f"largest relative error {worst:.1e}")
    if failed:
        text += "; failed: " + ", ".join(f"{w}/{p} ({why})" for (w, p), why in failed.items())
    text += "."
    if excluded:
        text += " Excluded although within tolerance: " + ", ".join(
            f"{w}/{p} ({why})" for (w, p), why in excluded.items()) + "."
    return text


def table_command(args):
    doc = load(args.results)
    doc["results"] = [r for r in doc["results"] if "peer" not in r and r.get("outputs") != "fresh"
                      and r.get("allocator", "default") == "default"]
    peer_docs = [load(p) for p in args.peers_default + args.peers_thp + args.peers_jemalloc]
    rows = series_rows([load(p) for p in args.stitch_fresh], "planner", "default", outputs="fresh")
    rows += series_rows([load(p) for p in args.stitch_jemalloc], "planner", "jemalloc", outputs="reused")
    rows += series_rows([load(p) for p in args.peers_default], "peer", "default", outputs="fresh")
    rows += series_rows([load(p) for p in args.peers_thp], "peer", "thp", outputs="fresh")
    rows += series_rows([load(p) for p in args.peers_jemalloc], "peer", "jemalloc", outputs="fresh")
    doc["results"] += rows
    check_failed = failed_checks(peer_docs)
    excluded = implausible_peers(doc["results"])
    failed = {**check_failed, **excluded}
    table, peers = comparison(doc["results"], failed)
    totals = summary(table)
    first_peers = peer_docs[0] if peer_docs else {}
    errors = [f"{r['workload']} / {r.get('peer') or r.get('planner')} ({r['allocator']}): "
              f"{r['error'].splitlines()[0][:200]}" for r in rows if r.get("error")]
    errors += [f"{u['workload']} / {u['planner']}: unsupported: {u['reason']}" for u in doc.get("unsupported", [])]
    info = {"rounds": doc.get("rounds", 1), "machine": first_peers.get("machine"),
            "skipped": args.skipped or None, "jemalloc": args.jemalloc or None,
            "skipped_peers": first_peers.get("skipped_peers", []), "check": first_peers.get("check", []),
            "check_summary": check_summary(peer_docs, check_failed, excluded) if peer_docs else None,
            "errors": errors}
    doc["peers"] = {**info, "comparisons": COMPARISONS,
                    "ratio_definition": "best peer median_s / stitch median_s; > 1: stitch faster",
                    "summary": totals, "table": table}
    with open(args.results, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    with open(args.out + ".md", "w") as f:
        f.write(markdown(doc, info, table, peers, failed, totals))
    machine = doc.get("machine", {})
    subtitle = (f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, {machine.get('date', '?')}; "
                f"torch {(info['machine'] or {}).get('torch', '—')}, jax {(info['machine'] or {}).get('jax', '—')}")
    with open(args.out + "-peers.svg", "w") as f:
        f.write(chart(table, totals, "CPU: stitch against the best peer per workload", subtitle))
    print(f"combine_cpu: wrote {args.results}, {args.out}.md, {args.out}-peers.svg", file=sys.stderr)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    med = sub.add_parser("median", help="median over rounds of `stitch bench --json` runs")
    med.add_argument("out")
    med.add_argument("rounds", nargs="+")
    tab = sub.add_parser("table", help="add the other series and write the table and chart")
    tab.add_argument("--results", required=True, help="bench/results/cpu-DATE.json (rewritten)")
    tab.add_argument("--out", required=True, help="prefix of PREFIX.md and PREFIX-peers.svg")
    for name in ("stitch-fresh", "stitch-jemalloc", "peers-default", "peers-thp", "peers-jemalloc"):
        tab.add_argument(f"--{name}", nargs="*", default=[], metavar="ROUND.json")
    tab.add_argument("--jemalloc", help="the libjemalloc the jemalloc series preloaded")
    tab.add_argument("--skipped", help="why the peers did not run (printed in the table)")
    args = p.parse_args(argv)
    if args.command == "median":
        doc = median_stitch([load(r) for r in args.rounds])
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    else:
        table_command(args)


if __name__ == "__main__":
    main()
