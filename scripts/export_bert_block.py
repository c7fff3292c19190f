#!/usr/bin/python3
"""Exports one BERT-style encoder layer from PyTorch to ONNX, with inputs and
PyTorch's outputs as .npy, for the end-to-end ONNX test (tests/bert).

    /usr/bin/python3 scripts/export_bert_block.py OUT_DIR [--opset N]

Writes OUT_DIR/model.onnx, OUT_DIR/inputs/NAME.npy for each ONNX graph input
and OUT_DIR/expected/NAME.npy for each ONNX graph output. Nothing is
downloaded: the weights are random from a fixed seed, and the same command
writes the same tensors on every run. Needs Debian's python3-torch and
python3-numpy, so it must run under /usr/bin/python3 (not a python3 from
another installation earlier on PATH).

The layer is written out from nn primitives, as Hugging Face's BertLayer is,
so the export has the ops a real BERT export has: Q/K/V projections, a split
into heads through view/permute, scaled QK^T plus an additive mask built from
a 0/1 attention mask, softmax, attention times V, merged heads, an output
projection, residual + LayerNorm, a feed-forward with erf GELU, residual +
LayerNorm. Shapes are static (no dynamic_axes, so no dim_param).
"""
import argparse
import math
import os
import sys

try:
    import numpy as np
    import torch
    from torch import nn
except ImportError as e:
    print(f"export_bert_block.py: {e} (run under /usr/bin/python3 with "
          "python3-torch and python3-numpy installed)", file=sys.stderr)
    sys.exit(2)

BATCH, SEQ, HIDDEN, HEADS, FFN = 2, 16, 64, 4, 256
# BERT's additive mask value for padded keys (Hugging Face used -10000 until 4.x).
MASK_VALUE = -10000.0
LAYER_NORM_EPS = 1e-12


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = HEADS
        self.head_dim = HIDDEN // HEADS
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)
        self.output = nn.Linear(HIDDEN, HIDDEN)

    def split_heads(self, x):
        batch, seq, _ = x.size()
        return x.view(batch, seq, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        batch, seq, _, _ = context.size()
        return self.output(context.view(batch, seq, HIDDEN))


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.attention_norm = nn.LayerNorm(HIDDEN, eps=LAYER_NORM_EPS)
        self.intermediate = nn.Linear(HIDDEN, FFN)
        self.ffn_output = nn.Linear(FFN, HIDDEN)
        self.output_norm = nn.LayerNorm(HIDDEN, eps=LAYER_NORM_EPS)

    def forward(self, hidden_states, attention_mask):
        # [batch, seq] of 1 (attend) / 0 (padding) -> [batch, 1, 1, seq] additive.
        extended = attention_mask[:, None, None, :].to(hidden_states.dtype)
        additive_mask = (1.0 - extended) * MASK_VALUE
        attended = self.attention(hidden_states, additive_mask)
        hidden = self.attention_norm(attended + hidden_states)
        ffn = self.ffn_output(nn.functional.gelu(self.intermediate(hidden)))
        return self.output_norm(ffn + hidden)


def make_model_and_inputs():
    torch.manual_seed(0)
    model = EncoderLayer().eval()
    # nn.LayerNorm starts at weight 1, bias 0; random values make the export carry
    # real scale/shift tensors rather than splats.
    with torch.no_grad():
        for norm in (model.attention_norm, model.output_norm):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    hidden_states = torch.randn(BATCH, SEQ, HIDDEN)
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    # The second sequence is padded: its last 5 keys are masked out.
    attention_mask[1, SEQ - 5:] = 0
    return model, (hidden_states, attention_mask)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--opset", type=int, default=17,
                        help="ONNX opset, 13..17 (17 exports LayerNormalization as one op)")
    args = parser.parse_args()
    if not 13 <= args.opset <= 17:
        parser.error("--opset must be 13..17 (the opsets Stitch imports)")

    torch.set_num_threads(1)
    model, inputs = make_model_and_inputs()
    input_names = ["hidden_states", "attention_mask"]
    output_names = ["output"]
    with torch.no_grad():
        expected = model(*inputs)

    os.makedirs(os.path.join(args.out_dir, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(args.out_dir, "expected"), exist_ok=True)
    torch.onnx.export(model, inputs, os.path.join(args.out_dir, "model.onnx"),
                      opset_version=args.opset, do_constant_folding=True,
                      input_names=input_names, output_names=output_names)
    for name, tensor in zip(input_names, inputs):
        np.save(os.path.join(args.out_dir, "inputs", name + ".npy"), tensor.numpy())
    np.save(os.path.join(args.out_dir, "expected", "output.npy"), expected.numpy())


if __name__ == "__main__":
    main()
