// The run-time checks both back ends make before a launch, so that they
// reject exactly the input the interpreter rejects, with its words.
#pragma once

#include <vector>

#include "ir/fusion_plan.h"
#include "stitch/graph.h"
#include "stitch/shape.h"

namespace stitch::runtime {

// The nodes of `group` whose run-time extents the caller checks before the
// launch (argmax/argmin over an axis that may be empty).
std::vector<int> arg_reduction_nodes(const Graph& g, const FusionGroup& group);

// A kernel met input the interpreter rejects (GroupSignature::status, which
// holds 1 + the node): the interpreter's UserError, naming the node.
[[noreturn]] void throw_rejected_input(const Graph& g, int node, const SymbolBindings& bindings);

// argmax/argmin over an axis that is empty at run time has no answer: the
// interpreter's UserError, word for word.
void check_arg_reduction_extent(const Graph& g, int node, const SymbolBindings& bindings);

}  // namespace stitch::runtime
