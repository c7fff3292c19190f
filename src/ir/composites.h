// Composite ops (softmax, layer_norm, gelu, ...) expanded into primitives when
// the graph is built, so fusion only ever sees primitives (DESIGN.md, Graph IR).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stitch/builder.h"

namespace stitch {

bool is_composite_op(std::string_view name);
const std::vector<std::string_view>& composite_op_names();

// Adds the primitives of composite `name` to `b`; the last one is named
// `result_name`. Throws UserError on bad operands or attributes.
ValueId expand_composite(GraphBuilder& b, std::string_view name, const std::vector<ValueId>& args,
                         const Attrs& attrs, const std::string& result_name);

}  // namespace stitch
