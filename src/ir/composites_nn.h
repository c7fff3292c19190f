// The convolution and pooling composites, conv, max_pool and avg_pool
// (docs/text-format.md, Composite ops), expanded into primitives.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stitch/builder.h"

namespace stitch {

// Called by expand_composite for conv, max_pool and avg_pool, with the operand
// count and attribute names already checked.
ValueId expand_nn_composite(GraphBuilder& b, std::string_view name, const std::vector<ValueId>& args,
                            const Attrs& attrs, const std::string& result_name);

}  // namespace stitch
