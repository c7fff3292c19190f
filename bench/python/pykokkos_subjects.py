"""The PyFuser subjects written against PyKokkos's API (examples/pykokkos/, docs/pykokkos.md)
timed unfused, fused and as plain numpy, in one process, at bench/pyfuser/pyfuser_bench.cpp's
sizes (or its extents divided by --scale). Writes PREFIX.json and PREFIX.md and prints
the table. Run with the environment `scripts/setup.sh --python` makes:

    .venv/bin/python bench/python/pykokkos_subjects.py PREFIX [--repeat N] [--rounds R]
                     [--scale S] [--subjects adi,mvt,...]

Per subject, R rounds; in each, every mode in turn (unfused, fused, numpy) makes its
arrays afresh (pk.set_mode starts new runtimes, so the modes cannot share views as the
C++ program's do), runs one warm-up program (it compiles), then N timed programs on the
same arrays; the round's time per mode is the median. Reported: the median over rounds
of each mode's time and of the speedups, each round's fused-vs-unfused speedup, calls and
kernels per timed program (unfused: each call its own kernel, fills included), the fused
programs' recording + analysis time as a share of their wall time, and the largest
|fused - numpy| / (1 + |numpy|) of any result after the warm-up programs, which start
from the same inputs. A program is its calls, a pk.fence() and the reads of its results.
"""

import argparse
import ctypes
import datetime
import json
import math
import os
import runpy
import sys
import time

import numpy as np

import stitch.pykokkos as pk
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name as cpu_model  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# (name, example file, sizes for setup() and inputs(), how to scale them, size for the report)
SUBJECTS = (
    ("fdtd_2d", "fdtd_2d", (1000, 1200, 10), (True, True, False), "3 x 1000 x 1200 f64, 10 steps"),
    ("mvt", "mvt", (2000,), (True,), "2000 x 2000 f64"),
    ("syrk", "syrk", (600, 500, "syrk"), (True, True, False), "C 600 x 600, A 600 x 500 f64"),
    ("syr2k", "syrk", (500, 400, "syr2k"), (True, True, False), "C 500 x 500, A, B 500 x 400 f64"),
    ("covariance", "covariance", (600, 500), (True, True), "data 600 x 500 f64"),
    ("adi", "adi", (500, 5), (True, False), "4 x 500 x 500 f64, 5 steps"),
    ("gaussian_nb", "gaussian_nb", (200000, 16, 4), (True, False, False), "X 200000 x 16 f64, 4 classes"),
)


def steady_allocation():
    """As pyfuser_bench.cpp: glibc keeps freed blocks below 256 MiB in its heap, so a
    temporary freed by one program is reused by the next without page faults in every
    mode (without it, its eager jacobi_1d moved between 3.9x and 16x)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 256 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)    # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def max_difference(got, want):
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        worst = max(worst, float(np.max(np.abs(g - w) / (1.0 + np.abs(w)), initial=0.0)))
    return worst


def timed(program, arguments, repeat, stats=None):
    """(median seconds, per-program lists of stats deltas) of `repeat` programs after a warm-up."""
    first = [np.array(r, copy=True) for r in program(*arguments)]  # later programs update the arrays
    times, deltas = [], []
    for _ in range(repeat):
        before = dict(stats()) if stats else None
        start = time.perf_counter()
        program(*arguments)
        seconds = time.perf_counter() - start
        times.append(seconds)
        if stats:
            after = stats()
            deltas.append({k: after[k] - before[k] for k in after} | {"wall": seconds})
    return sorted(times)[len(times) // 2], deltas, first


def bench(name, example, sizes, repeat, rounds):
    module = runpy.run_path(os.path.join(SOURCE, "examples", "pykokkos", example + ".py"), run_name="bench")
    per_round = {"unfused": [], "fused": [], "numpy": []}
    counts, shares, diff = {}, [], 0.0
    for _ in range(rounds):
        results = {}
        for mode in ("unfused", "fused"):
            pk.set_mode(mode)
            arguments = module["setup"](*sizes)
            pk.fence()  # the views' host writes run now, not in the first program
            seconds, deltas, results[mode] = timed(module["program"], arguments, repeat, lambda: pk._runtime().stats())
            per_round[mode].append(seconds)
            counts[mode] = (sum(d["calls"] for d in deltas) / repeat, sum(d["kernels"] for d in deltas) / repeat)
            if mode == "fused":
                shares += [(d["record_seconds"] + d["analysis_seconds"]) / d["wall"] for d in deltas]
            del arguments
        pk.set_mode("fused")
        seconds, _, results["numpy"] = timed(module["numpy_program"], module["inputs"](*sizes), repeat)
        per_round["numpy"].append(seconds)
        diff = max(diff, max_difference(results["fused"], results["numpy"]),
                   max_difference(results["unfused"], results["numpy"]))
    median = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    speedups = [u / f for u, f in zip(per_round["unfused"], per_round["fused"])]
    return {
        "name": name,
        "calls": counts["fused"][0],
        "kernels_unfused": counts["unfused"][1],
        "kernels_fused": counts["fused"][1],
        "numpy_seconds": median(per_round["numpy"]),
        "unfused_seconds": median(per_round["unfused"]),
        "fused_seconds": median(per_round["fused"]),
        "speedup": median(speedups),
        "speedup_per_round": [round(s, 3) for s in speedups],
        "speedup_vs_numpy": median([n / f for n, f in zip(per_round["numpy"], per_round["fused"])]),
        "tracing_analysis_share": median(shares),
        "max_difference_vs_numpy": diff,
    }


HEADER = ("| subject | size | calls | kernels unfused | kernels fused | numpy ms | unfused ms | fused ms | "
          "fused vs unfused | per round | fused vs numpy | tracing+analysis | max diff vs numpy |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")


def row(r):
    return (f"| {r['name']} | {r['size']} | {r['calls']:.0f} | {r['kernels_unfused']:.0f} | {r['kernels_fused']:.0f} | "
            f"{r['numpy_seconds'] * 1e3:.3f} | {r['unfused_seconds'] * 1e3:.3f} | {r['fused_seconds'] * 1e3:.3f} | "
            f"{r['speedup']:.2f} | {' '.join(f'{s:.2f}' for s in r['speedup_per_round'])} | "
            f"{r['speedup_vs_numpy']:.2f} | {r['tracing_analysis_share'] * 100:.2f}% | {r['max_difference_vs_numpy']:.1e} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="writes PREFIX.json and PREFIX.md")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=int, default=1, help="divide the subjects' extents by this")
    parser.add_argument("--subjects", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    only = set(filter(None, args.subjects.split(",")))
    steady_allocation()
    print(HEADER, flush=True)
    rows = []
    for name, example, sizes, scaled, size in SUBJECTS:
        if only and name not in only:
            continue
        sizes = tuple(s // args.scale if scale else s for s, scale in zip(sizes, scaled))
        r = bench(name, example, sizes, args.repeat, max(1, args.rounds))
        r["size"] = size if args.scale == 1 else f"{size} (extents / {args.scale})"
        rows.append(r)
        print(row(r), flush=True)
    geomean = math.exp(sum(math.log(r["speedup"]) for r in rows) / len(rows)) if rows else 0.0
    print(f"\ngeometric-mean speedup, fused vs unfused: {geomean:.2f} over {len(rows)} subjects")
    machine = f"{cpu_model()}, {os.cpu_count()} CPUs"
    date = datetime.date.today().isoformat()
    command = f"bench/python/pykokkos_subjects.py PREFIX --repeat {args.repeat} --rounds {args.rounds} --scale {args.scale}"
    with open(args.prefix + ".json", "w") as f:
        json.dump({"machine": machine, "date": date, "command": command, "repeat": args.repeat,
                   "rounds": args.rounds, "scale": args.scale, "subjects": rows, "geomean_speedup": geomean}, f, indent=2)
    with open(args.prefix + ".md", "w") as f:
        f.write(f"# PyFuser subjects on PyKokkos's API: unfused, fused and numpy ({date})\n\n"
                f"Machine: {machine}. Command: `{command}`. Method: the docstring of "
                "`bench/python/pykokkos_subjects.py`; times are per program, median over rounds of each round's "
                "median.\n\n" + HEADER + "\n" + "\n".join(row(r) for r in rows) +
                f"\n\ngeometric-mean speedup, fused vs unfused: {geomean:.2f} over {len(rows)} subjects\n")


if __name__ == "__main__":
    main()
