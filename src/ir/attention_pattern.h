// Scaled-dot-product attention as one op (docs/attention.md): a target
// rewrite on the canonical Graph IR, run by the pipeline's `attention` stage
// for every route into the compiler (text, ONNX, the C++ and Python front
// ends).
//
// fuse_attention recognises
//
//   p = softmax(x) over the last axis      (reduce_max, sub, exp, reduce_sum, div)
//   x = terms(scale(dot(scale(q), scale(kt))))
//   out = dot(p, v)
//
// where scale() is any chain of mul/div by a splat constant, kt holds k with
// its last two axes swapped, and terms() is any chain of `add(s, bias)` and
// `select(mask, s, -inf)` / `select(mask, -inf, s)` above the scaling, and
// replaces it with attention(q, k, v[, bias], scale, causal=false): the masks
// become a bias of 0 and -inf. Every value between q, k, v, the bias terms and
// `out` must have no other user. expand_attention is its inverse, for back
// ends without an attention call.
#pragma once

#include "stitch/graph.h"

namespace stitch {

// `g` (canonical) with every match replaced; `g` itself when nothing matches.
Graph fuse_attention(const Graph& g);

// `g` with every attention node replaced by its composite in canonical form
// (transpose, dot, mul, add, the softmax's primitives, dot; a causal mask
// from two iotas); `g` itself when it has none.
Graph expand_attention(const Graph& g);

}  // namespace stitch
