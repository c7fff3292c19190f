#!/usr/bin/env python3
"""A DIEN click-through-rate model (inference) as one .stitch graph.

Follows DIEN (Zhou et al., "Deep Interest Evolution Network for Click-Through Rate
Prediction", AAAI 2019), which builds on DIN (Zhou et al., "Deep Interest Network
for Click-Through Rate Prediction", KDD 2018), as the authors' public TensorFlow code
(github.com/mouna99/dien, model "DIEN") builds it; the layer sizes default to that
code's (embedding 18, GRU hidden 36 = 2 x 18, attention MLP 80-40-1, output MLP
200-80-2). It is many small matrix products and much elementwise and reduction work
on small rows, the kind of graph on which FusionStitching reports its gains. Graph,
for a batch of B samples with behaviour histories of length T:

- embeddings: `gather` from three tables (users, items, categories; i32 ids as
  inputs); the target item is [item, category] (2E wide), each history step too;
- interest extractor: a GRU (TensorFlow's GRUCell form: gates = sigmoid([x, h] Wg +
  bg) split into r and u; c = tanh([x, r*h] Wc + bc); h' = u*h + (1-u)*c), unrolled
  over T steps from h = 0; a step past the end of a history keeps the state and
  outputs 0 (the sequence-length behaviour of the reference's dynamic RNN);
- attention (DIN's): the target projected to H with PReLU, then for every step
  [q, f, q-f, q*f] through dense 80 (sigmoid), 40 (sigmoid), 1; padded steps set to
  -2^32+1; softmax over the T steps;
- interest evolving layer: AUGRU, the same GRU with its update gate scaled per step
  by (1 - attention score) (DIEN's VecAttGRUCell); its last state is the interest;
- output: concat of [user, target item, interest, sum-pooled history (a reduction
  over T)]; BatchNorm with its inference statistics, folded into a per-feature scale
  and shift (two inputs); dense 200 and 80, each with Dice (DIN's activation: the
  layer's output normalised with the mean and standard deviation over the batch,
  axis 0, eps 1e-9, gating alpha*x and x by its sigmoid) or PReLU
  (`--activation prelu`); dense 2; softmax, + 1e-8.

The padding mask is one input `mask: bool[B, T]` (true = a real step);
it stands for both the reference's float mask and its sequence lengths, so with
random inputs the valid steps need not be a prefix. Training-only parts (the
auxiliary loss over negative samples) are not included.

Sizes: batch 512 and T = 20 by default (the reference code uses batch 128 and
histories of up to 100 steps; the graph grows linearly with T, two GRU steps per
history step, and the planners' time with it, so `--seq 100` is the heavy
variant); the embedding tables are inputs, by default of 10000 users, 100000 items
and 1000 categories (random ids from `--random-inputs` fall in [-8, 8), which `gather`
wraps numpy-style, so the tables need at least 8 rows).

With random weights uniform in [-2, 2) the logits reach hundreds and the final
softmax saturates to exactly 0 and 1, so `y` alone checks little:
`--return-intermediates` also returns the logits, the interest state, the attention
scores and the GRU outputs (the tests check that graph; it keeps those values in
memory, so it is not the one to benchmark).

    mkdir -p out    # ignored by git; generated graphs are not committed
    python3 bench/models/dien.py > out/dien.stitch
    python3 bench/models/dien.py --small --return-intermediates > out/dien_small.stitch
    stitch check out/dien_small.stitch
"""
import sys

from stitch_text import Graph, call, command_line, parse_sizes, ttype

SIZES = {
    "batch": (512, 7, "batch size"),
    "seq": (20, 5, "behaviour history length T (GRU steps)"),
    "embed": (18, 5, "embedding size E"),
    "hidden": (36, 11, "GRU hidden size (2 x E in DIEN)"),
    "att1": (80, 13, "first attention MLP layer"),
    "att2": (40, 7, "second attention MLP layer"),
    "mlp1": (200, 19, "first output MLP layer"),
    "mlp2": (80, 9, "second output MLP layer"),
    "users": (10000, 23, "user vocabulary"),
    "items": (100000, 31, "item vocabulary"),
    "cats": (1000, 11, "category vocabulary"),
}

PADDING = -4294967295.0  # -2**32 + 1, DIEN's masked attention score


def dense(g, name, x, n_in, n_out, act=None):
    w = g.param(f"{name}_w", "f32", [n_in, n_out])
    b = g.param(f"{name}_b", "f32", [n_out])
    y = call("add", call("dot", x, w), b)
    return g.set(name, call(act, y) if act else y)


def prelu(g, name, x, width):
    alpha = g.param(f"{name}_alpha", "f32", [width])
    return g.let(name, "add", call("relu", x), call("mul", alpha, call("min", x, 0.0)))


def dice(g, name, x, width):
    """DIN's Dice as DIEN's code computes it, with the statistics of the batch (axis 0):
    std = sqrt(mean((x - mean)^2 + eps)), p = sigmoid((x - mean) / (std + eps)),
    alpha * (1 - p) * x + p * x, eps 1e-9. Written in primitives: `layer_norm` would
    put eps in other places."""
    alpha = g.param(f"{name}_alpha", "f32", [width])
    mean = g.let(f"{name}_mean", "reduce_mean", x, axes=[0], keepdims=True)
    xc = g.let(f"{name}_centred", "sub", x, mean)
    std = g.let(f"{name}_std", "sqrt",
                call("reduce_mean", call("add", call("mul", xc, xc), 1e-9), axes=[0], keepdims=True))
    p = g.let(f"{name}_p", "sigmoid", call("div", xc, call("add", std, 1e-9)))
    return g.let(name, "add", call("mul", call("mul", alpha, call("sub", 1.0, p)), x),
                 call("mul", p, x))


def gru(g, name, xs, steps, mask_cols, b, n_in, hid, att=None, state_name=None):
    """TensorFlow GRUCell unrolled over `steps`; `xs[t]` is f32[b, n_in]. With `att`
    (a list of f32[b, 1] scores) it is DIEN's AUGRU. Returns (outputs, last state);
    `state_name` names the last state."""
    wg = g.param(f"{name}_gates_w", "f32", [n_in + hid, 2 * hid])
    bg = g.param(f"{name}_gates_b", "f32", [2 * hid])
    wc = g.param(f"{name}_cand_w", "f32", [n_in + hid, hid])
    bc = g.param(f"{name}_cand_b", "f32", [hid])
    h = g.let(f"{name}_h0", "constant", value=0.0, shape=[b, hid])
    outs = []
    for t in range(steps):
        p = f"{name}_t{t}_"
        gates = g.let(p + "gates", "sigmoid",
                      call("add", call("dot", call("concat", xs[t], h, axis=1), wg), bg))
        r = g.let(p + "r", "slice", gates, start=[0, 0], stop=[b, hid])
        u = g.let(p + "u", "slice", gates, start=[0, hid], stop=[b, 2 * hid])
        if att is not None:
            u = g.let(p + "u_att", "mul", call("sub", 1.0, att[t]), u)
        c = g.let(p + "c", "tanh",
                  call("add", call("dot", call("concat", xs[t], call("mul", r, h), axis=1), wc), bc))
        hn = g.let(p + "hn", "add", call("mul", u, h), call("mul", call("sub", 1.0, u), c))
        outs.append(g.let(p + "out", "select", mask_cols[t], hn, 0.0))
        last = t == steps - 1 and state_name
        h = g.let(state_name if last else p + "h", "select", mask_cols[t], hn, h)
    return outs, h


def build(a):
    B, T, E, H = a.batch, a.seq, a.embed, a.hidden
    if min(a.users, a.items, a.cats) < 8:
        a.parser.error("vocabularies need at least 8 rows (random ids fall in [-8, 8))")
    name = "dien_small" if a.small else "dien"
    g = Graph(name, header=[
        f"DIEN: batch {B}, history {T}, embedding {E}, GRU hidden {H}, attention "
        f"{a.att1}-{a.att2}-1, MLP {a.mlp1}-{a.mlp2}-2 ({a.activation}), vocabularies "
        f"{a.users}/{a.items}/{a.cats}.",
        f"Generated by `{command_line()}`; do not edit (docs/models.md)."])
    uid = g.param("uid", "i32", [B])
    mid = g.param("mid", "i32", [B])
    cat = g.param("cat", "i32", [B])
    his_mid = g.param("his_mid", "i32", [B, T])
    his_cat = g.param("his_cat", "i32", [B, T])
    mask = g.param("mask", "bool", [B, T])
    uid_table = g.param("uid_table", "f32", [a.users, E])
    mid_table = g.param("mid_table", "f32", [a.items, E])
    cat_table = g.param("cat_table", "f32", [a.cats, E])

    g.comment("embeddings")
    uid_eb = g.let("uid_eb", "gather", uid_table, uid, axis=0)
    item_eb = g.let("item_eb", "concat", call("gather", mid_table, mid, axis=0),
                    call("gather", cat_table, cat, axis=0), axis=1)
    his_eb = g.let("his_eb", "concat", call("gather", mid_table, his_mid, axis=0),
                   call("gather", cat_table, his_cat, axis=0), axis=2)
    his_sum = g.let("his_sum", "reduce_sum", his_eb, axes=[1])
    xs = [g.let(f"x_t{t}", "reshape", call("slice", his_eb, start=[0, t, 0], stop=[B, t + 1, 2 * E]),
                shape=[B, 2 * E]) for t in range(T)]
    mask_cols = [g.let(f"mask_t{t}", "slice", mask, start=[0, t], stop=[B, t + 1]) for t in range(T)]

    g.comment("interest extractor: GRU")
    outs, _ = gru(g, "gru1", xs, T, mask_cols, B, 2 * E, H)
    facts = g.let("facts", "concat", *[call("reshape", o, shape=[B, 1, H]) for o in outs], axis=1)

    g.comment("attention of the target item over the GRU outputs (DIN)")
    q = prelu(g, "att_q", dense(g, "att_q_dense", item_eb, 2 * E, H), H)
    queries = g.let("att_queries", "broadcast", call("reshape", q, shape=[B, 1, H]), shape=[B, T, H])
    din_all = g.let("att_in", "reshape",
                    call("concat", queries, facts, call("sub", queries, facts), call("mul", queries, facts), axis=2),
                    shape=[B * T, 4 * H])
    d1 = dense(g, "att_d1", din_all, 4 * H, a.att1, act="sigmoid")
    d2 = dense(g, "att_d2", d1, a.att1, a.att2, act="sigmoid")
    d3 = dense(g, "att_d3", d2, a.att2, 1)
    scores = g.let("att_scores", "select", mask, call("reshape", d3, shape=[B, T]), PADDING)
    alphas = g.let("att_alphas", "softmax", scores, axis=1)
    att = [g.let(f"alpha_t{t}", "slice", alphas, start=[0, t], stop=[B, t + 1]) for t in range(T)]

    g.comment("interest evolving layer: AUGRU")
    _, interest = gru(g, "augru", outs, T, mask_cols, B, H, H, att=att, state_name="interest")

    g.comment("output MLP")
    width = E + 2 * E + H + 2 * E
    inp = g.let("mlp_in", "concat", uid_eb, item_eb, interest, his_sum, axis=1)
    bn = g.let("bn", "add", call("mul", inp, g.param("bn_scale", "f32", [width])),
               g.param("bn_shift", "f32", [width]))
    act = dice if a.activation == "dice" else prelu
    f1 = act(g, "mlp1_act", dense(g, "mlp1", bn, width, a.mlp1), a.mlp1)
    f2 = act(g, "mlp2_act", dense(g, "mlp2", f1, a.mlp1, a.mlp2), a.mlp2)
    logits = dense(g, "logits", f2, a.mlp2, 2)
    y = g.let("y", "add", call("softmax", logits, axis=1), 1e-8)
    outputs = [(y, ttype("f32", [B, 2]))]
    if a.return_intermediates:
        outputs += [(logits, ttype("f32", [B, 2])), (interest, ttype("f32", [B, H])),
                    (alphas, ttype("f32", [B, T])), (facts, ttype("f32", [B, T, H]))]
    return g.text(outputs)


def main():
    args = parse_sizes(__doc__, SIZES, flags=[
        (["--activation"], dict(choices=["dice", "prelu"], default="dice",
                                help="activation of the output MLP (default dice)")),
        (["--return-intermediates"], dict(action="store_true",
                                          help="also return the logits, the interest state, the "
                                               "attention scores and the GRU outputs (for checks)"))])
    sys.stdout.write(build(args))


if __name__ == "__main__":
    main()
