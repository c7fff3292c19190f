// Convolution epilogues (docs/executable.md, Convolutions), run by the
// pipeline's conv stage on the CPU after the layout is chosen: what a conv's
// result alone feeds, a residual add and then a ReLU or a clamp by
// constants, becomes the conv op's side input and activation bounds, which
// oneDNN applies as post-ops while the result is in registers, so the result
// is written once instead of being read back by a kernel of its own.
#pragma once

#include "stitch/graph.h"

namespace stitch {

// `g` with each conv followed by `add(conv, s)` and/or `relu`/`clamp(lo, hi)`
// (each the only reader of the value before it, none a graph output) as one
// conv; `g` itself when there is none.
Graph fuse_conv_epilogues(const Graph& g);

}  // namespace stitch
