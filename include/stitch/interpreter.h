// The reference interpreter: runs the Graph IR op by op on the host. It is the
// oracle every compiled path is checked against, so it favours exactness over
// speed: floating math is done in double and rounded to the op's dtype after
// every op; floating reductions accumulate in double. Semantics: docs/semantics.md.
#pragma once

#include <cstdint>
#include <vector>

#include "stitch/graph.h"
#include "stitch/kernel.h"
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

// The interpreter's outputs and, beside each, a per-element bound on how far a
// compiled back end's result may be from it: an f64 tensor of the output's
// shape, propagated through the graph beside the reference values
// (docs/semantics.md, "The propagated bound"). It follows cancellation (a sum
// is bounded by the sum of its terms' magnitudes) and conditioning (tan near a
// pole amplifies its operand's error); it assumes every discrete decision
// (comparison, select, floor, argmax, a cast to an integer) comes out as in the
// reference. Zero where every back end must agree exactly, and on non-float
// outputs.
struct BoundedReference {
  std::vector<Tensor> outputs;
  std::vector<Tensor> bounds;
};
BoundedReference interpret_with_error_bounds(const Graph& g, const std::vector<Tensor>& inputs);

// One argument of a user-kernel call: an array (read, and written in place
// where the kernel writes it) or a scalar value, converted to the parameter's
// dtype when it fits exactly enough (docs/kernel-language.md, Calls).
struct KernelArg {
  ArrayView array;  // arrays only (is_array)
  bool is_array = false;
  bool is_float = false;
  double float_value = 0.0;
  int64_t int_value = 0;

  KernelArg(Tensor& t) : array(ArrayView::of(t)), is_array(true) {}  // NOLINT: implicit, so a call reads k(x, y, 2.0)
  KernelArg(ArrayView v) : array(v), is_array(true) {}  // NOLINT
  KernelArg(double v) : is_float(true), float_value(v) {}  // NOLINT
  KernelArg(int64_t v) : int_value(v) {}  // NOLINT
  KernelArg(int v) : int_value(v) {}  // NOLINT
  KernelArg(bool v) : int_value(v ? 1 : 0) {}  // NOLINT
};

// Runs `kernel` on `args` (one per parameter) as the reference: each index of
// the range in row-major order, every op rounded to its dtype as in graphs,
// a reduction accumulated in double (floats) or wrapping int64. Returns the
// reduction's value as a 0-d tensor, or an empty tensor for a parallel_for.
// UserErrors: arguments that do not match the parameters, an index outside
// an array, and a race (two different indices of the range touching one
// element where one of them writes it), which compiled code would leave to
// chance.
Tensor interpret_kernel(const UserKernel& kernel, const std::vector<KernelArg>& args);

}  // namespace stitch
