// The CPU's channels-last layout for convolutions (docs/cpu-backend.md,
// Convolutions), run by the pipeline's conv stage after the convs that stay
// library calls are chosen: oneDNN's fast convolutions read and write
// [N, spatial..., C], while the Graph IR's conv is [N, C, spatial...].
//
// Each conv op becomes transpose(conv(transpose(x), w, channels_last=true))
// and the transposes move past what follows them, so that between two convs
// they meet and cancel: through elementwise ops (their other operands
// permuted: splat constants reshaped, broadcasts of small values broadcast
// from the permuted value), pads, slices, reductions and gathers by a 1-D
// index (resize's; their attributes permuted). A transpose stops at anything else (a reshape, a dot, an
// output) and runs there as a kernel. XLA's layout assignment and
// onnxruntime's NCHWc transformer do the same job by other means.
#pragma once

#include "stitch/graph.h"

namespace stitch {

// `g` (canonical) with every conv that is not channels-last rewritten as
// above, in canonical form; `g` itself when it has none.
Graph channels_last_convs(const Graph& g);

}  // namespace stitch
