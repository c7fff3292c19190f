"""The README's CPU table from a results JSON of `scripts/bench.sh --peers`.

Usage: python3 bench/peers/readme_table.py bench/results/cpu-<date>.json

Prints one markdown row per workload of the peers table (kernels per planner,
stitch's median with outputs reused, its fraction of the copy of its own
footprint, its speed-up over xla, and the best peer with its ratio in both
like-for-like comparisons), then the geometric means."""
import json
import sys


def series(results, workload, planner):
    for r in results:
        if (r.get("workload") == workload and r.get("planner") == planner and "peer" not in r
                and r.get("allocator", "default") == "default" and r.get("outputs", "reused") == "reused"):
            return r
    return {}


def main(path):
    d = json.load(open(path))
    results = d["results"]
    print("| workload | kernels none→xla→stitch | stitch ms | stitch / copy (own footprint) | stitch vs xla "
          "| best peer, reused (jemalloc) | stitch vs it | best peer, fresh (glibc; torch also with huge pages) "
          "| stitch fresh vs it |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: |")

    def peer(c):
        return f"{c['best_peer']} {c['best_peer_s'] * 1e3:.2f} ms" if c["best_peer"] else "—"

    def ratio(v):
        return f"{v:.2f}×" if v else "—"

    for m in d["peers"]["table"]:
        w = m["workload"]
        s, x, n = series(results, w, "stitch"), series(results, w, "xla"), series(results, w, "none")
        kernels = f"{n.get('kernels', '?')}→{x.get('kernels', '?')}→{s.get('kernels', '?')}"
        print(f"| {w} | {kernels} | {s['median_s'] * 1e3:.2f} | {s['fraction_of_copy']:.2f} | "
              f"{x['median_s'] / s['median_s']:.2f}× | {peer(m['reused'])} | {ratio(m['reused']['ratio'])} | "
              f"{peer(m['fresh'])} | {ratio(m['fresh']['ratio'])} |")
    print()
    for s in d["peers"]["summary"]:
        print(f"geometric mean, {s['group']}: reused {s['reused']['geomean']:.2f}× (n={s['reused']['n']}), "
              f"fresh {s['fresh']['geomean']:.2f}× (n={s['fresh']['n']})")


if __name__ == "__main__":
    main(sys.argv[1])
