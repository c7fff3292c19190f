"""Where the time goes: Stitch's steps and onnxruntime's profiler on the model set's
exports, the time in matrix products, convolutions and attention ("library") apart from
the rest; writes PREFIX.json and PREFIX.md.

    python bench/onnx/time_split.py EXPORT_DIR PREFIX --stitch build/stitch [--only NAME,...]
                                 [--planner stitch] [--repeat N] [--threads T]

Per static export, one after the other (never both at once):
- onnxruntime's CPU provider (every graph optimisation, T intra-op threads, sequential
  execution) with its profiler on: W + N runs, each node's kernel time ("dur" of its
  "Node" events) summed by op type over the N timed runs and divided by N. Library ops:
  LIBRARY_OPS below (onnxruntime's fused convolutions carry their activation and
  residual, as Stitch's conv calls do).
- Stitch: `stitch bench --steps --planners P --repeat N` (OMP_NUM_THREADS=T), each
  launch-list step's mean time; library: dot, conv and attention calls less the dot
  epilogues' kernels, which run inside a dot's step and are counted as the rest.
Both are sums of per-node or per-step times, not wall time: the gaps between nodes
(onnxruntime's scheduling, Python) are in neither.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name  # noqa: E402

LIBRARY_OPS = {"MatMul", "Gemm", "FusedMatMul", "FusedGemm", "MatMulNBits", "MatMulInteger", "Conv", "FusedConv",
               "NchwcConv", "ConvTranspose", "Attention", "MultiHeadAttention", "GroupQueryAttention", "QLinearConv",
               "DynamicQuantizeMatMul", "Einsum"}


def ort_profile(path, feeds, threads, warmup, repeat):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    for _ in range(2):
        try:
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            break
        except Exception:
            # As run.py: the optimisers refuse some exports; unoptimised, they load.
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for _ in range(warmup):
        session.run(None, feeds)
    with tempfile.TemporaryDirectory() as folder:
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(folder, "ort")
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        for _ in range(warmup + repeat):
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
    first_timed = sorted(e["ts"] for e in runs)[warmup] if len(runs) > warmup else 0
    by_op = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or e["ts"] < first_timed:
            continue
        op = e.get("args", {}).get("op_name", "?")
        by_op[op] = by_op.get(op, 0.0) + e["dur"] * 1e-6 / repeat
    library = sum(t for op, t in by_op.items() if op in LIBRARY_OPS)
    return {"library_s": library, "rest_s": sum(by_op.values()) - library, "by_op": by_op,
            "level": options.graph_optimization_level.name}


def stitch_profile(stitch, path, planner, threads, repeat):
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "bench.json")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        subprocess.run([stitch, "bench", path, "--planners", planner, "--steps", "--repeat", str(repeat),
                        "--warmup", "2", "--json", out], check=True, env=env, stdout=subprocess.DEVNULL)
        with open(out) as f:
            row = json.load(f)["results"][0]
    steps = row["steps"]
    epilogues = sum(s.get("epilogue_seconds", 0.0) for s in steps["steps"])
    return {"library_s": steps["library_s"] - epilogues, "rest_s": steps["kernels_s"] + epilogues,
            "wall_s": row["median_s"], "steps": len(steps["steps"])}


def markdown(report):
    m = report["machine"]
    lines = [f"# Where the time goes: Stitch and onnxruntime on the model set's exports ({report['date']})", "",
             f"Machine: {m['cpu']}, {m['cpus']} CPUs, onnxruntime {report['onnxruntime']}, {report['threads']} "
             f"threads each. Command: `{report['command']}`. Method: the docstring of bench/onnx/time_split.py "
             f"(sums of per-node and per-step times, means over {report['repeat']} runs; library = matrix products, "
             "convolutions and attention). Times in ms.", "",
             f"| export | onnxruntime library | onnxruntime rest | stitch ({report['planner']}) library | "
             "stitch rest | rest, stitch / onnxruntime |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in report["results"]:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['error']} | | | | |")
            continue
        o, s = r["onnxruntime"], r["stitch"]
        ratio = s["rest_s"] / o["rest_s"] if o["rest_s"] > 0 else float("inf")
        lines.append(f"| {r['name']} | {o['library_s'] * 1e3:.2f} | {o['rest_s'] * 1e3:.2f} | "
                     f"{s['library_s'] * 1e3:.2f} | {s['rest_s'] * 1e3:.2f} | {ratio:.2f} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    parser.add_argument("prefix")
    parser.add_argument("--stitch", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--planner", default="stitch")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    import numpy as np
    import onnxruntime
    with open(os.path.join(args.folder, "manifest.json")) as f:
        manifest = json.load(f)
    only = set(filter(None, args.only.split(",")))
    report = {"date": datetime.date.today().isoformat(), "machine": {"cpu": cpu_name(), "cpus": os.cpu_count()},
              "onnxruntime": onnxruntime.__version__, "threads": args.threads, "repeat": args.repeat,
              "planner": args.planner, "command": "python " + " ".join(sys.argv), "results": []}
    for entry in manifest["exports"]:
        if "error" in entry or entry.get("batch") != "static" or (only and entry["name"] not in only):
            continue
        path = os.path.join(args.folder, entry["file"])
        data = os.path.join(args.folder, entry["name"])
        feeds = {n: np.load(os.path.join(data, "inputs", n + ".npy")) for n in entry["inputs"]}
        result = {"name": entry["name"]}
        try:
            result["onnxruntime"] = ort_profile(path, feeds, args.threads, args.warmup, args.repeat)
            result["stitch"] = stitch_profile(args.stitch, path, args.planner, args.threads, args.repeat)
        except (subprocess.CalledProcessError, Exception) as e:  # recorded, the rest go on
            result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        report["results"].append(result)
        print(json.dumps({k: v for k, v in result.items() if k != "onnxruntime"}), flush=True)
    with open(args.prefix + ".json", "w") as f:
        json.dump(report, f, indent=1)
    with open(args.prefix + ".md", "w") as f:
        f.write(markdown(report))


if __name__ == "__main__":
    main()
