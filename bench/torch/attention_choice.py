"""The backend's attention choice (python/stitch/torch_attention_choice.py) measured on
the model set's attention shapes: for each, written-out and fused seconds and the
verdict, with Q, K and V contiguous and laid out as a projection's heads
(`x.view(B, T, H, D).transpose(1, 2)`, as the models' graphs have them).

    PYTHONPATH=build/python .venv/bin/python bench/torch/attention_choice.py [--dtypes f32,bf16]

Prints one Markdown table. Each problem is timed as the backend times it (5
alternating rounds, medians), so the verdicts can differ between runs where the two
are near level.
"""

import argparse

import torch

from stitch import torch_attention_choice as choice

# name: (B, H, T, D), mask (None, "bias": a float padding bias [B, 1, 1, T], "causal")
SHAPES = {
    "BERT layer": ((8, 12, 128, 64), "bias"),
    "GPT-2 block": ((8, 12, 128, 64), "causal"),
    "ViT block": ((8, 12, 197, 64), None),
    "Llama-style block": ((4, 8, 128, 32), "causal"),
}


def _mask(kind, b, t, dtype):
    if kind == "bias":
        return torch.zeros(b, 1, 1, t, dtype=dtype)
    if kind == "causal":
        return torch.ones(t, t, dtype=torch.bool).tril()
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="f32,bf16")
    args = parser.parse_args()
    torch.set_num_threads(2)
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ms, written out / fused\n")
    print("| shape | dtype | layout | mode | written ms | fused ms | chosen |")
    print("|---|---|---|---|---:|---:|---|")
    for name, ((b, h, t, d), kind) in SHAPES.items():
        for dtn in args.dtypes.split(","):
            dtype = dtypes[dtn]
            for layout in ("contiguous", "heads"):
                for training in (False, True):
                    if layout == "heads":
                        q, k, v = (torch.randn(b, t, h, d, dtype=dtype).transpose(1, 2) for _ in range(3))
                    else:
                        q, k, v = (torch.randn(b, h, t, d, dtype=dtype) for _ in range(3))
                    written, fused = choice._measure(choice.problem(q, k, v, _mask(kind, b, t, dtype), training))
                    chosen = "written out" if choice.written_out_chosen(written, fused) else "fused"
                    print(f"| {name} {[b, h, t, d]} {kind or ''} | {dtn} | {layout} | "
                          f"{'training' if training else 'inference'} | {written * 1e3:.2f} | {fused * 1e3:.2f} | "
                          f"{chosen} |", flush=True)


if __name__ == "__main__":
    main()
