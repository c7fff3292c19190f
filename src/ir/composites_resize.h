// The resize composite (docs/text-format.md, Composite ops): ONNX Resize's
// nearest, linear and cubic modes over static extents, as gathers along each
// resized axis with source positions and weights computed from an iota in
// f64, the reference's arithmetic, so indices agree with it exactly.
#pragma once

#include <string>

#include "stitch/builder.h"

namespace stitch {

// resize(x) with attributes `sizes` (required), `axes`, `scales`, `mode`,
// `coordinate_transformation_mode`, `nearest_mode`, `cubic_coeff_a`,
// `exclude_outside`, `roi`, `extrapolation_value`; UserError when they do not
// fit `x`.
ValueId expand_resize(GraphBuilder& b, ValueId x, const Attrs& attrs, const std::string& result_name);

}  // namespace stitch
