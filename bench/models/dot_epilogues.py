#!/usr/bin/env python3
"""Dot epilogues on and off, side by side (docs/fusion.md, Dot epilogues).

For each graph, `stitch bench --planners PLANNER` runs once with
STITCH_DOT_EPILOGUES=1 and once with 0 per round, the order alternating
between rounds so that a drift of the machine falls on both; the table gives
each setting's kernel count and the median over rounds of `stitch bench`'s
median run time (outputs reused), and off / on.

    python3 bench/models/dot_epilogues.py build/stitch out/bert.stitch ... -o bench/results/epilogues-DATE
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name as cpu_model  # noqa: E402


def bench(stitch, path, planner, setting, repeat, warmup):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        env = dict(os.environ, STITCH_DOT_EPILOGUES=setting)
        subprocess.run([stitch, "bench", path, "--planners", planner, "--repeat", str(repeat), "--warmup",
                        str(warmup), "--json", out], env=env, check=True, capture_output=True, text=True)
        with open(out) as f:
            row = json.load(f)["results"][0]
    return row["median_s"], row["kernels"], row.get("fallback", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stitch")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--planner", default="stitch")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("-o", "--output", help="write OUTPUT.json and OUTPUT.md")
    args = ap.parse_args()
    rows = []
    for path in args.files:
        times = {"1": [], "0": []}
        kernels = {}
        for r in range(args.rounds):
            for setting in (("1", "0") if r % 2 == 0 else ("0", "1")):
                seconds, count, fallback = bench(args.stitch, path, args.planner, setting, args.repeat, args.warmup)
                if fallback:
                    sys.exit(f"{path}: fell back: {fallback}")
                times[setting].append(seconds)
                kernels[setting] = count
        on, off = statistics.median(times["1"]), statistics.median(times["0"])
        row = {"graph": os.path.splitext(os.path.basename(path))[0], "kernels_on": kernels["1"],
               "kernels_off": kernels["0"], "median_s_on": on, "median_s_off": off, "off_over_on": off / on,
               "runs_on": times["1"], "runs_off": times["0"]}
        rows.append(row)
        print(f"{row['graph']}: kernels {kernels['0']} -> {kernels['1']}, {off:.4g} s -> {on:.4g} s, off/on {off / on:.3f}",
              flush=True)
    ratios = [r["off_over_on"] for r in rows]
    geomean = statistics.geometric_mean(ratios)
    doc = {"machine": cpu_model(), "planner": args.planner, "rounds": args.rounds, "repeat": args.repeat,
           "warmup": args.warmup, "geomean_off_over_on": geomean, "results": rows}
    print(f"geomean off/on {geomean:.3f}")
    if args.output:
        with open(args.output + ".json", "w") as f:
            json.dump(doc, f, indent=1)
        with open(args.output + ".md", "w") as f:
            f.write(f"# Dot epilogues on and off ({args.planner} planner, CPU back end, {cpu_model()})\n\n")
            f.write(f"`bench/models/dot_epilogues.py`: per graph, {args.rounds} rounds alternating "
                    f"STITCH_DOT_EPILOGUES=1 and 0, each a `stitch bench --repeat {args.repeat} --warmup "
                    f"{args.warmup}` (outputs reused); the median over rounds of its median run time.\n\n")
            f.write("| graph | kernels off | kernels on | seconds off | seconds on | off / on |\n")
            f.write("| --- | ---: | ---: | ---: | ---: | ---: |\n")
            for r in rows:
                f.write(f"| {r['graph']} | {r['kernels_off']} | {r['kernels_on']} | {r['median_s_off']:.4g} | "
                        f"{r['median_s_on']:.4g} | {r['off_over_on']:.3f} |\n")
            f.write(f"\nGeometric mean of off / on: {geomean:.3f} (above 1: epilogues faster).\n")


if __name__ == "__main__":
    main()
