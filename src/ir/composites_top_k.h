// The top_k and top_k_indices composites (docs/text-format.md, Composite
// ops): the k largest (or smallest) entries along one static axis, in order,
// ties to the lower index, as ONNX's TopK; values and indices are two
// composites over the same expansion, which CSE merges when both are used.
#pragma once

#include <string>
#include <string_view>

#include "stitch/builder.h"

namespace stitch {

// top_k(x) (values, x's dtype) or top_k_indices(x) (i64) with attributes `k`
// (required), `axis` (-1) and `largest` (true). UserError when they do not
// fit `x`.
ValueId expand_top_k(GraphBuilder& b, std::string_view name, ValueId x, const Attrs& attrs,
                     const std::string& result_name);

// The most k top_k expands for: it costs 2k reductions over the axis.
inline constexpr int64_t kMaxTopK = 128;

}  // namespace stitch
