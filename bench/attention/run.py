"""Scaled-dot-product attention on the CPU, in one process, alternating rounds
(docs/attention.md, Benchmarks): Stitch with its attention stage (one call) and without
it (two dots and a softmax), PyTorch's fused kernel (F.scaled_dot_product_attention),
PyTorch eager written out, torch.compile of the written-out form (Inductor) and, when
jax imports, jax.jit of jax.nn.dot_product_attention. Each is checked against a float64
reference first; every variant writes a fresh output (the frameworks' own policy; the
Stitch variants allocate their result too). Writes PREFIX.json and PREFIX.md.

    PYTHONPATH=build/python python bench/attention/run.py PREFIX [--rounds N]

The shapes are bench/attention/*.stitch's: BERT-base (padding bias) and GPT-2 at 1024
tokens (causal).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import stitch

HERE = os.path.dirname(os.path.abspath(__file__))

CASES = {
    "bert_attention": dict(shape=(8, 12, 128, 64), causal=False),
    "gpt2_attention": dict(shape=(4, 12, 1024, 64), causal=True),
}


def inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    b, h, t, d = case["shape"]
    q, k, v = (rng.standard_normal((b, h, t, d)).astype(np.float32) for _ in range(3))
    bias = None
    if not case["causal"]:
        bias = np.zeros((b, 1, 1, t), np.float32)
        bias[..., t * 3 // 4:] = -10000.0
    return q, k, v, bias


def reference(q, k, v, bias, causal):
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(q.shape[-1])
    if bias is not None:
        s = s + bias
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))


def stitch_variant(name, attention_stage):
    os.environ["STITCH_ATTENTION"] = "1" if attention_stage else "0"
    try:
        module = stitch.load(os.path.join(HERE, name + ".stitch"))
        exe = stitch.compile(module.graphs[name])
    finally:
        os.environ.pop("STITCH_ATTENTION", None)
    return lambda q, k, v, bias: exe(q, k, v, *([] if bias is None else [bias]))


def torch_variants(causal):
    def tensors(q, k, v, bias):
        return [torch.from_numpy(a) if a is not None else None for a in (q, k, v, bias)]

    def fused(q, k, v, bias):
        q, k, v, bias = tensors(q, k, v, bias)
        with torch.inference_mode():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=causal).numpy()

    def written_out(q, k, v, bias):
        s = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        if bias is not None:
            s = s + bias
        if causal:
            t = s.shape[-1]
            s = s.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
        return s.softmax(-1) @ v

    compiled = torch.compile(written_out)

    def eager(q, k, v, bias):
        with torch.inference_mode():
            return written_out(*tensors(q, k, v, bias)).numpy()

    def inductor(q, k, v, bias):
        with torch.inference_mode():
            return compiled(*tensors(q, k, v, bias)).numpy()

    return {"torch_sdpa": fused, "torch_eager": eager, "torch_compile": inductor}


def jax_variant(causal):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        print(f"jax_jit skipped: {e}", file=sys.stderr)
        return {}

    @jax.jit
    def attend(q, k, v, bias):
        # jax's layout is [batch, tokens, heads, dim].
        out = jax.nn.dot_product_attention(*(jnp.swapaxes(x, 1, 2) for x in (q, k, v)), bias=bias, is_causal=causal)
        return jnp.swapaxes(out, 1, 2)

    def run(q, k, v, bias):
        return np.asarray(attend(q, k, v, bias).block_until_ready())

    return {"jax_jit": run}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count())
    report = {"machine": {"cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                                        if line.startswith("model name")), platform.processor()),
                          "cpus": os.cpu_count(), "torch": torch.__version__},
              "rounds": args.rounds, "cases": {}}
    for name, case in CASES.items():
        q, k, v, bias = inputs(case)
        want = reference(q, k, v, bias, case["causal"])
        variants = {"stitch": stitch_variant(name, True), "stitch_unfused": stitch_variant(name, False),
                    **torch_variants(case["causal"]), **jax_variant(case["causal"])}
        result = {}
        for variant, fn in variants.items():
            got = fn(q, k, v, bias)
            result[variant] = {"max_error": float(np.abs(got - want).max())}
        times = {variant: [] for variant in variants}
        order = list(variants)
        for r in range(-2, args.rounds):
            for variant in order[r % len(order):] + order[:r % len(order)]:
                start = time.perf_counter()
                variants[variant](q, k, v, bias)
                if r >= 0:
                    times[variant].append(time.perf_counter() - start)
        for variant, t in times.items():
            result[variant]["ms"] = statistics.median(t) * 1e3
        report["cases"][name] = result
        print(name, {v: round(r["ms"], 2) for v, r in result.items()}, flush=True)
    with open(args.prefix + ".json", "w") as f:
        json.dump(report, f, indent=1)
    m = report["machine"]
    lines = [f"# Attention on the CPU: Stitch beside PyTorch and JAX ({time.strftime('%Y-%m-%d')})", "",
             f"Machine: {m['cpu']}, {m['cpus']} CPUs, torch {m['torch']}. `bench/attention/run.py` (method in its "
             f"docstring): medians of {args.rounds} alternating rounds in one process, every variant writing a "
             "fresh output; max error against float64. Ratio: the variant's time over Stitch's (above 1: Stitch "
             "faster).", ""]
    for name, result in report["cases"].items():
        lines += [f"## {name} {CASES[name]['shape']}{' causal' if CASES[name]['causal'] else ', padding bias'}", "",
                  "| variant | ms | vs Stitch | max error |", "|---|---:|---:|---:|"]
        base = result["stitch"]["ms"]
        lines += [f"| {v} | {r['ms']:.3f} | {r['ms'] / base:.2f}x | {r['max_error']:.1e} |" for v, r in result.items()]
        lines.append("")
    with open(args.prefix + ".md", "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
