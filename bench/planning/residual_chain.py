#!/usr/bin/env python3
"""A chain of residual blocks as one .stitch graph, for timing the planners
(docs/fusion.md, Not done yet): each block scales its input, takes a
LayerNorm, a softmax and a tanh-GELU over f32[ROWS, COLS], and adds the block's
input back. The graph grows linearly with BLOCKS (`stitch plan --planner none`
lists about 25 nodes a block).

    python3 bench/planning/residual_chain.py BLOCKS [--rows 64] [--cols 256] > chain.stitch
    stitch plan chain.stitch --planner xla     # time it
"""
import argparse
import sys


def chain(blocks, rows, cols):
    t = f"f32[{rows}, {cols}]"
    lines = [f"graph residual_chain_{blocks}(x: {t}) -> ({t}) {{"]
    cur = "x"
    for b in range(blocks):
        lines += [
            f"  s{b} = mul({cur}, 0.5)",
            f"  n{b} = layer_norm(s{b}, axes=[-1], eps=1e-5)",
            f"  p{b} = softmax(n{b}, axis=-1)",
            f"  g{b} = gelu(p{b}, approximate=\"tanh\")",
            f"  r{b} = add(g{b}, {cur})",
        ]
        cur = f"r{b}"
    lines += [f"  return {cur}", "}"]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("blocks", type=int)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--cols", type=int, default=256)
    args = parser.parse_args()
    if args.blocks < 1 or args.rows < 1 or args.cols < 1:
        print("residual_chain.py: BLOCKS, --rows and --cols must be positive", file=sys.stderr)
        sys.exit(2)
    sys.stdout.write(chain(args.blocks, args.rows, args.cols))


if __name__ == "__main__":
    main()
