#!/usr/bin/env python3
"""Many workers, one compile: N `stitch run` workers start cold at once on the same
model graphs, each with its own empty local cache, without and with the shared remote
tier on a real redis-server (docs/kernel-cache.md, A cache shared by many workers).

Each worker runs the graphs one after another, as a job's worker builds its model at
start-up; its *first result* is the moment its first graph's outputs are written.
Three modes per N: no store (cold), an empty store the N workers share (shared), and
that store once filled, met by N new workers with empty local caches (filled: a restart
of the job, or its workers on other machines). Reported per N and mode: compiles per distinct kernel entry (from STITCH_DUMP=cache),
time to first result and to all results (median and slowest worker), and the store's
size. Each worker gets the machine's cores / N threads (OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS, at least 1), as a job's launcher gives its workers. The
redis-server is started here on a free loopback port and stopped after.

    python3 bench/cache/fleet.py build/stitch --workers 2 4 8 -o bench/results/NAME
    python3 bench/cache/fleet.py build/stitch --check    # CI: small graphs, 4 workers;
                                                          # fails unless each kernel compiled once
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")

# The model set (bench/models/): full sizes for the measurement, --small for --check.
GRAPHS = [
    ("bert", "bert.py", []),
    ("gpt2", "gpt2_block.py", ["--blocks", "12"]),
    ("t5", "t5_block.py", []),
    ("dien", "dien.py", []),
]

CACHE_LINE = re.compile(r"cache: hits=(\d+) remote_hits=(\d+) misses=(\d+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--loglevel", "warning", "--logfile", "/dev/null"])
        for _ in range(200):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.025)
        raise SystemExit("fleet.py: redis-server did not start (Debian package redis-server)")

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return r.stdout.strip()

    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def store_size(self):
        keys = [k for k in self.cli("--scan", "--pattern", "stitch:v1:*").split("\n") if k]
        entry_bytes = sum(int(self.cli("STRLEN", k) or 0) for k in keys)
        used = re.search(r"used_memory:(\d+)", self.cli("INFO", "memory"))
        return {"entries": len(keys), "entry_bytes": entry_bytes, "used_memory": int(used.group(1)) if used else 0}

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def write_graphs(work, small, bert_batch):
    paths = []
    for name, script, args in GRAPHS:
        path = os.path.join(work, name + ".stitch")
        extra = ["--small"] if small else args
        if name == "bert" and bert_batch and not small:
            extra = [*extra, "--batch", str(bert_batch)]
        with open(path, "w") as out:
            subprocess.run([sys.executable, os.path.join(MODELS, script), *extra], stdout=out, check=True)
        paths.append((name, path))
    return paths


# One worker: a shell loop over the graphs that stamps the clock after each run, so
# that all N start within one fork of each other and are timed by themselves.
WORKER = r'''
for g in "$@"; do
  "$STITCH" run "$g" --backend cpu --random-inputs 1 --output-dir "$OUT_DIR/results" >/dev/null 2>>"$OUT_DIR/stderr" || exit 1
  date +%s.%N >> "$OUT_DIR/times"
done
'''


def threads_per_worker(n):
    """The machine's cores shared out: N workers of a job on one machine get cores / N
    threads each (at least 1), as torchrun sets OMP_NUM_THREADS=1 for its workers.
    More would oversubscribe the cores, and idle OpenMP and OpenBLAS threads spin: 8
    warm workers on 2 cores with 2 threads each took 8.5 s against 3.5 s with 1."""
    return max(1, (os.cpu_count() or 1) // n)


def run_workers(stitch, graphs, n, work, remote, secret_file):
    procs = []
    threads = str(threads_per_worker(n))
    start = time.time()
    for i in range(n):
        out = os.path.join(work, f"w{i}")
        os.makedirs(out)
        env = dict(os.environ, STITCH=stitch, OUT_DIR=out, STITCH_CACHE_DIR=os.path.join(out, "cache"),
                   STITCH_DUMP="cache", OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
        env.pop("STITCH_REMOTE_CACHE", None)
        if remote:
            env.update(STITCH_REMOTE_CACHE=remote, STITCH_CACHE_KEY_FILE=secret_file)
        procs.append((out, subprocess.Popen(["sh", "-c", WORKER, "worker", *[p for _, p in graphs]], env=env)))
    workers = []
    for out, p in procs:
        if p.wait() != 0:
            raise SystemExit(f"fleet.py: a worker failed:\n{open(os.path.join(out, 'stderr')).read()}")
        times = [float(t) - start for t in open(os.path.join(out, "times")).read().split()]
        counts = [tuple(map(int, m.groups())) for m in CACHE_LINE.finditer(open(os.path.join(out, "stderr")).read())]
        if len(counts) != len(graphs):
            raise SystemExit(f"fleet.py: expected {len(graphs)} cache lines, got {len(counts)}")
        workers.append({"times": times, "counts": counts})
    return workers


def summarize(workers, graphs):
    per_graph_compiles = [sum(w["counts"][g][2] for w in workers) for g in range(len(graphs))]
    first = [w["times"][0] for w in workers]
    last = [w["times"][-1] for w in workers]
    return {
        "compiles_per_entry": per_graph_compiles,
        "remote_hits": sum(c[1] for w in workers for c in w["counts"]),
        "first_result_median_s": statistics.median(first),
        "first_result_max_s": max(first),
        "all_results_median_s": statistics.median(last),
        "all_results_max_s": max(last),
        "first_result_per_worker_s": [round(t, 3) for t in first],
        "all_results_per_worker_s": [round(t, 3) for t in last],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stitch", help="the stitch binary")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--check", action="store_true", help="small graphs, 4 workers, fail unless one compile per entry")
    ap.add_argument("--bert-batch", type=int, help="the batch of the first graph, BERT (default: bert.py's, 8); "
                    "1 makes the first result a single request's")
    ap.add_argument("-o", "--output", help="write OUTPUT.json and OUTPUT.md")
    args = ap.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("fleet.py: redis-server is missing (Debian package redis-server; scripts/setup.sh --tests)")
    stitch = os.path.abspath(args.stitch)
    counts = [4] if args.check else args.workers
    root = tempfile.mkdtemp(prefix="stitch-fleet-")
    rows = []
    try:
        graphs = write_graphs(root, args.check, args.bert_batch)
        secret_file = os.path.join(root, "secret")
        with open(secret_file, "w") as f:
            f.write(os.urandom(16).hex())
        for n in counts:
            # cold: no store; shared: an empty store the N workers fill; filled: the
            # same store, filled by them, met by N new workers with empty local caches
            # (a job's restart, or its workers on other machines).
            redis = None
            try:
                for mode in ("cold", "shared", "filled"):
                    if mode == "shared":
                        redis = Redis()
                    work = os.path.join(root, f"{mode}-{n}")
                    workers = run_workers(stitch, graphs, n, work, redis.url() if redis else None, secret_file)
                    row = {"workers": n, "mode": mode, "threads_per_worker": threads_per_worker(n),
                           **summarize(workers, graphs)}
                    if redis:
                        row["store"] = redis.store_size()
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            finally:
                if redis:
                    redis.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    if args.check:
        shared = [r for r in rows if r["mode"] == "shared"][0]
        filled = [r for r in rows if r["mode"] == "filled"][0]
        if shared["compiles_per_entry"] != [1] * len(GRAPHS) or filled["compiles_per_entry"] != [0] * len(GRAPHS):
            raise SystemExit(f"fleet.py --check: compiles per entry {shared['compiles_per_entry']} with an empty store "
                             f"and {filled['compiles_per_entry']} with a filled one, expected one each and none")
        print("fleet.py --check: every kernel entry compiled once across 4 workers, and not at all by 4 more")
        return
    if args.output:
        with open(args.output + ".json", "w") as f:
            json.dump({"graphs": [g for g, _ in graphs], "bert_batch": args.bert_batch or 8, "rows": rows}, f, indent=1)
        with open(args.output + ".md", "w") as f:
            f.write(markdown(rows, graphs, args.bert_batch or 8))


def markdown(rows, graphs, bert_batch):
    lines = ["| workers | threads each | mode | compiles per entry | first result, median / slowest (s) | all results, median / slowest (s) | store |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        store = r.get("store")
        store_text = f"{store['entries']} entries, {store['entry_bytes'] / 2**20:.1f} MiB" if store else "-"
        lines.append(f"| {r['workers']} | {r['threads_per_worker']} | {r['mode']} | {' '.join(map(str, r['compiles_per_entry']))} | "
                     f"{r['first_result_median_s']:.1f} / {r['first_result_max_s']:.1f} | "
                     f"{r['all_results_median_s']:.1f} / {r['all_results_max_s']:.1f} | {store_text} |")
    by = {(r["workers"], r["mode"]): r for r in rows}
    lines.append("")
    for n in sorted({r["workers"] for r in rows}):
        cold = by.get((n, "cold"))
        for mode, what in (("shared", "an empty shared store"), ("filled", "a filled store")):
            other = by.get((n, mode))
            if cold and other:
                lines.append(f"- {n} workers, {what} against none: first result (slowest worker) "
                             f"{cold['first_result_max_s'] / other['first_result_max_s']:.2f}x sooner, all results "
                             f"{cold['all_results_max_s'] / other['all_results_max_s']:.2f}x.")
    lines.append(f"\nGraphs, in each worker's order: {', '.join(g for g, _ in graphs)} (bench/models/); "
                 f"BERT at batch {bert_batch} x 128.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
