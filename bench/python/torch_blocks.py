"""Blocks built from torch.nn timed eagerly, compiled by Inductor (torch.compile's
default) and compiled by Stitch's backend (torch.compile(backend="stitch"),
docs/torch.md), in one process, on the same inputs, for inference. Writes PREFIX.json
and PREFIX.md and prints the table. Run with the environment `scripts/setup.sh --python`
makes:

    .venv/bin/python bench/python/torch_blocks.py PREFIX [--repeat N] [--warmup W]
                     [--blocks layernorm,softmax,...] [--small]

Per block, under torch.inference_mode(): each variant is compiled by its first call
(timed as compile_s), then W untimed calls of each, then N rounds in which every
variant is called once in turn, each round starting with the next variant; the median
of each variant's N times is reported, and the ratios of the medians. Outputs are checked against eager (max |difference|).

Stitch runs twice: as by default (matrix products left to PyTorch) and with
options={"dots": True} (matrix products as Stitch dots, their epilogues fused).
For Stitch it also reports where a call's time goes (stitch.torch_backend.profiling()):
the median per call of the time making arguments numpy arrays, inside the Stitch
executables (the binding, run_into and the kernels), and wrapping results as tensors,
and of the rest of the call: Dynamo's guards, AOTAutograd's wrappers, the FX module and
the ops PyTorch runs.
With --kernels (build/stitch present), each partition's generated graph is also timed
by `stitch bench` (kernels only, outputs reused), so the executable's own overhead
shows as the difference. Fixed per-call cost: the same compiled block called on a
one-row input, Stitch's both by address (Executable.run_at, the default) and with its
partitions' tensors passed through numpy (stitch.torch_backend.by_address = False),
the three alternating.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn

import stitch.torch_backend as backend

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(SOURCE, "tests", "python"))
from torch_models import BertLayer, GPT2Block, LlamaBlock  # noqa: E402


def randomise(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.05 + (1.0 if p.dim() == 1 else 0.0))
    return module.eval()


def _bert_inputs(b, t, d):
    mask = torch.ones(b, t)
    mask[:, t * 3 // 4:] = 0
    return torch.randn(b, t, d), mask


# name -> (size text, module factory, input factory, one-row input factory); --small divides.
def blocks(small):
    rows = 512 if small else 8192
    tokens = 128 if small else 1024
    batch, seq = (2, 64) if small else (8, 128)
    return {
        "layernorm": (f"[{rows}, 1024] f32", lambda: randomise(nn.LayerNorm(1024)),
                      lambda: (torch.randn(rows, 1024),), lambda: (torch.randn(1, 1024),)),
        "softmax": (f"[{rows}, 1024] f32", lambda: nn.Softmax(dim=-1),
                    lambda: (torch.randn(rows, 1024) * 4,), lambda: (torch.randn(1, 1024),)),
        "rmsnorm": (f"[{rows}, 1024] f32", lambda: randomise(nn.RMSNorm(1024, eps=1e-6)),
                    lambda: (torch.randn(rows, 1024),), lambda: (torch.randn(1, 1024),)),
        "gelu_mlp": (f"[{tokens}, 768] -> 3072 -> 768 f32",
                     lambda: randomise(nn.Sequential(nn.Linear(768, 3072), nn.GELU(), nn.Linear(3072, 768))),
                     lambda: (torch.randn(tokens, 768),), lambda: (torch.randn(1, 768),)),
        "bert_layer": (f"[{batch}, {seq}, 768], 12 heads, FFN 3072 f32", lambda: randomise(BertLayer(768, 12, 3072)),
                       lambda: _bert_inputs(batch, seq, 768), lambda: _bert_inputs(1, 1, 768)),
        "gpt2_block": (f"[{batch}, {seq}, 768], 12 heads f32", lambda: randomise(GPT2Block(768, 12, seq)),
                       lambda: (torch.randn(batch, seq, 768),), lambda: (torch.randn(1, seq, 768),)),
        # The Llama-style sizes: SwiGLU over [4, 128, 688].
        "llama_block": (f"[{batch // 2}, {seq}, 256], 8 heads, 4 KV heads, SwiGLU 688 f32",
                        lambda: randomise(LlamaBlock(256, 8, 4, 688, seq)),
                        lambda: (torch.randn(batch // 2, seq, 256),), lambda: (torch.randn(1, seq, 256),)),
    }


def inductor_kernels():
    from torch._inductor import metrics

    return metrics.generated_kernel_count


def reset_inductor_kernels():
    from torch._inductor import metrics

    metrics.reset()


def timed(fn, args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def max_difference(got, want):
    return (got.double() - want.double()).abs().max().item()


def kernel_only_seconds(texts, binary, repeat):
    """`stitch bench`'s median (kernels only, outputs reused) of each generated graph."""
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="stitch-torch-bench-") as tmp:
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"p{i}.stitch")
            with open(path, "w") as f:
                f.write(text)
            out = os.path.join(tmp, f"p{i}.json")
            subprocess.run([binary, "bench", path, "--planners", "stitch", "--repeat", str(repeat),
                            "--json", out], check=True, capture_output=True)
            with open(out) as f:
                total += json.load(f)["results"][0]["median_s"]
    return total


def run_block(name, spec, args):
    size, make_module, make_inputs, make_tiny = spec
    torch.manual_seed(0)
    module = make_module()
    inputs = make_inputs()
    tiny = make_tiny()
    torch._dynamo.reset()
    backend.reset_stats()
    variants = {"eager": module, "inductor": torch.compile(module), "stitch": torch.compile(module, backend="stitch")}
    result = {"name": name, "size": size}
    with torch.inference_mode():
        want = module(*inputs)
        for v in ("inductor", "stitch"):
            if v == "inductor":
                reset_inductor_kernels()
            result[f"{v}_compile_s"] = timed(variants[v], inputs)
            if v == "inductor":
                result["inductor_kernels"] = inductor_kernels()
            result[f"{v}_max_difference"] = max_difference(variants[v](*inputs), want)
        stats = [s for s in backend.all_stats()]
        result["stitch_partitions"] = sum(len(s.partitions) for s in stats)
        result["stitch_kernels"] = sum(s.kernel_count for s in stats)
        result["stitch_fallbacks"] = [p.fallback for s in stats for p in s.partitions if p.fallback]
        result["torch_ops"] = {op: n for s in stats for op, n in s.torch_ops.items()}
        texts = [p.text for s in stats for p in s.partitions if p.text]
        # Matrix products as Stitch dots too (options={"dots": True}), compiled after the
        # stats above so that they describe the default.
        variants["stitch_dots"] = torch.compile(module, backend="stitch", options={"dots": True})
        result["stitch_dots_compile_s"] = timed(variants["stitch_dots"], inputs)
        result["stitch_dots_max_difference"] = max_difference(variants["stitch_dots"](*inputs), want)
        for _ in range(args.warmup):
            for fn in variants.values():
                fn(*inputs)
        times = {v: [] for v in variants}
        # Each round calls every variant once, starting with a different one each round:
        # a call runs slower after another variant's (caches, the heap, the thread team
        # in another state; RMSNorm: Stitch 1.13 ms after itself, 1.34 after Inductor,
        # 1.58 after eager), so each variant follows each other equally often.
        order = list(variants.items())
        for r in range(args.repeat):
            for v, fn in order[r % len(order):] + order[:r % len(order)]:
                times[v].append(timed(fn, inputs))
        for v in variants:
            result[f"{v}_s"] = statistics.median(times[v])
        result["stitch_vs_inductor"] = result["inductor_s"] / result["stitch_s"]
        result["stitch_dots_vs_inductor"] = result["inductor_s"] / result["stitch_dots_s"]
        result["stitch_vs_eager"] = result["eager_s"] / result["stitch_s"]
        result["inductor_vs_eager"] = result["eager_s"] / result["inductor_s"]

        # Where a Stitch call's time goes.
        partitions = [p for s in backend.all_stats() for p in s.partitions]
        parts = ("arguments", "stitch", "results")
        per_call = {k: [] for k in ("call",) + parts}
        with backend.profiling():
            for _ in range(args.repeat):
                before = {k: sum(p.seconds[k] for p in partitions) for k in parts}
                per_call["call"].append(timed(variants["stitch"], inputs))
                for k in parts:
                    per_call[k].append(sum(p.seconds[k] for p in partitions) - before[k])
        for k, v in per_call.items():
            result[f"per_call_{k}_s"] = statistics.median(v)
        rest = [c - sum(per_call[k][i] for k in parts) for i, c in enumerate(per_call["call"])]
        result["per_call_rest_s"] = statistics.median(rest)
        if args.kernels and texts:
            result["kernels_only_s"] = kernel_only_seconds(texts, args.kernels, max(args.repeat, 10))

        # Fixed per-call cost: one row; Stitch's also with its partitions' arguments and
        # results going through numpy (the boundary before Executable.run_at), alternating.
        for v in ("inductor", "stitch"):
            variants[v](*tiny)
        one_row = {"inductor": [], "stitch": [], "stitch_numpy": []}
        for _ in range(max(args.repeat, 50)):
            one_row["inductor"].append(timed(variants["inductor"], tiny))
            one_row["stitch"].append(timed(variants["stitch"], tiny))
            backend.by_address = False
            try:
                one_row["stitch_numpy"].append(timed(variants["stitch"], tiny))
            finally:
                backend.by_address = True
        for v, t in one_row.items():
            result[f"{v}_one_row_s"] = statistics.median(t)
    return result


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


HEADER = ("| block | size | eager ms | Inductor ms | Stitch ms | Stitch vs Inductor | Stitch vs eager | "
          "kernels Inductor | kernels Stitch (partitions) | max diff Stitch | Stitch call: args / exe / results / rest us "
          "| kernels only ms | one row Inductor / Stitch / Stitch via numpy us | Stitch with dots ms | with dots vs Inductor |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|")


def row(r):
    kernels_only = f"{r['kernels_only_s'] * 1e3:.3f}" if "kernels_only_s" in r else "-"
    return (f"| {r['name']} | {r['size']} | {r['eager_s'] * 1e3:.3f} | {r['inductor_s'] * 1e3:.3f} | "
            f"{r['stitch_s'] * 1e3:.3f} | {r['stitch_vs_inductor']:.2f}x | {r['stitch_vs_eager']:.2f}x | "
            f"{r['inductor_kernels']} | {r['stitch_kernels']} ({r['stitch_partitions']}) | "
            f"{r['stitch_max_difference']:.1e} | "
            f"{r['per_call_arguments_s'] * 1e6:.0f} / {r['per_call_stitch_s'] * 1e6:.0f} / "
            f"{r['per_call_results_s'] * 1e6:.0f} / {r['per_call_rest_s'] * 1e6:.0f} | {kernels_only} | "
            f"{r['inductor_one_row_s'] * 1e6:.0f} / {r['stitch_one_row_s'] * 1e6:.0f} / "
            f"{r['stitch_numpy_one_row_s'] * 1e6:.0f} | {r['stitch_dots_s'] * 1e3:.3f} | "
            f"{r['stitch_dots_vs_inductor']:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix", help="writes PREFIX.json and PREFIX.md")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--blocks", default="", help="comma-separated names (default: all)")
    parser.add_argument("--small", action="store_true", help="small sizes, for a quick check of the script")
    default_binary = os.path.join(SOURCE, "build", "stitch")
    parser.add_argument("--kernels", default=default_binary if os.path.exists(default_binary) else "",
                        help="the stitch binary that times each partition's kernels alone ('' skips it)")
    args = parser.parse_args()

    table = blocks(args.small)
    names = [b for b in args.blocks.split(",") if b] or list(table)
    results = []
    for name in names:
        results.append(run_block(name, table[name], args))
        print(row(results[-1]), flush=True)

    machine = f"{cpu_model()}, {os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads)"
    date = datetime.datetime.now().strftime("%Y-%m-%d")
    # Settings that change what is measured (the allocator's, the thread team's) go
    # with the command.
    settings = [f"{k}={v}" for k, v in sorted(os.environ.items())
                if k.startswith(("MALLOC_", "OMP_", "GOMP_", "STITCH_", "THP_"))]
    command = " ".join(settings + [os.path.basename(sys.executable)] + sys.argv)
    with open(args.prefix + ".json", "w") as f:
        json.dump({"machine": machine, "date": date, "command": command, "repeat": args.repeat,
                   "warmup": args.warmup, "results": results}, f, indent=1)
    with open(args.prefix + ".md", "w") as f:
        f.write(f"# torch.compile: eager, Inductor and Stitch ({date})\n\n"
                f"Machine: {machine}. Command: `{command}`. Method: the docstring of "
                "bench/python/torch_blocks.py (medians of interleaved calls under torch.inference_mode).\n\n")
        f.write(HEADER + "\n" + "\n".join(row(r) for r in results) + "\n")
    print(HEADER)
    for r in results:
        print(row(r))


if __name__ == "__main__":
    main()
