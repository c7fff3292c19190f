// The reference interpreter: runs the Graph IR op by op on the host. It is the
// oracle every compiled path is checked against, so it favours exactness over
// speed: floating math is done in double and rounded to the op's dtype after
// every op; floating reductions accumulate in double. Semantics: docs/semantics.md.
#pragma once

#include <cstdint>
#include <vector>

#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch {

// Checks each input against its parameter (dtype, rank, extents) and binds
// the symbolic dims consistently. Throws UserError naming the parameter.
SymbolBindings bind_inputs(const Graph& g, const std::vector<Tensor>& inputs);

// The same check for inputs known only by dtype and shape (tensors in device
// memory).
struct InputType {
  DType dtype;
  std::vector<int64_t> shape;
};
SymbolBindings bind_input_types(const Graph& g, const std::vector<InputType>& inputs);

// Runs `g` on `inputs` (one per parameter, in order) and returns one tensor
// per graph output, in order. Data-dependent errors (a gather index out of
// range, argmax over an empty axis) are UserErrors.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace stitch
