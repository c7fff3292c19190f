// Shape arithmetic over symbolic dims at import time (docs/onnx.md, Symbolic
// shape arithmetic): `Shape` of a value with a symbolic dim gives a shape value
// (context.h), and the integer ops exporters build reshape targets with
// (Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, Add/Sub/Mul/Div, Equal,
// Where) are evaluated on its entries, so the target reaches Reshape or Expand
// with its symbols in place.
#pragma once

#include "onnx/context.h"

namespace stitch::onnx_import {

// Whether an input of `n` is a shape value.
bool has_shape_value_input(const ImportContext& ctx, const ::onnx::NodeProto& n);

// Evaluates `n`, whose inputs are shape values and known tensors, defining its
// output as a shape value (or a known tensor when every entry is static, or a
// graph constant for ConstantOfShape); false when this op or form is not one
// it evaluates.
bool fold_shape_values(ImportContext& ctx, const ::onnx::NodeProto& n);

}  // namespace stitch::onnx_import
