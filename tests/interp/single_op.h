// Runs one op (primitive or composite) on concrete tensors through the
// interpreter: the graph has one parameter per input, shaped like it.
#pragma once

#include <string_view>
#include <vector>

#include "stitch/attr.h"
#include "stitch/tensor.h"

namespace stitch::testing {

Tensor run_single_op(std::string_view op, const std::vector<Tensor>& inputs, const Attrs& attrs = {});

}  // namespace stitch::testing
