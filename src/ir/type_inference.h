// Attribute validation and result-type inference for every primitive op: the
// single place that knows each op's typing rule (DESIGN.md, Graph IR).
#pragma once

#include <cstdint>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

// Checks `attrs` against the op's schema and the operand types, rewrites them
// in normalised form (defaults filled, axes non-negative and sorted, slice
// bounds clamped, literals in the op's dtype) and returns the result type.
// Throws UserError with a message naming the op on any violation.
// Normalisation is idempotent: feeding the output attrs back in changes nothing.
TensorType infer_type(OpKind kind, const std::vector<TensorType>& inputs, Attrs& attrs);

// numpy broadcasting of two shapes; throws UserError naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Non-negative axis for rank `rank`, from a possibly negative one.
int64_t normalize_axis(int64_t axis, int rank, std::string_view op);

}  // namespace stitch
