// The pipeline's conv stage (pipeline/pipeline.h): a conv op that no
// library call runs on the target becomes its composite (ir/composites_nn.h),
// im2col into a batched dot, or a fused sum of taps when depthwise.
#pragma once

#include <functional>

#include "stitch/graph.h"

namespace stitch {

// `g` with every conv node for which `keep` is false replaced by its
// primitives, in canonical form; `g` itself when no node is replaced.
Graph expand_convs(const Graph& g, const std::function<bool(const Graph&, const Node&)>& keep);

}  // namespace stitch
