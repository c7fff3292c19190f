// Interval arithmetic on i64 index expressions, shared by the emitters' index
// facts (docs/cpu-backend.md, Thread loops; docs/cuda-backend.md): where an
// index provably stays small, both write plain C arithmetic instead of
// overflow-checked helpers.
#pragma once

#include <optional>
#include <utility>

#include "stitch/ops.h"

namespace stitch::codegen::common {

// Inclusive bounds, wide enough that a product of two 2^62 bounds is exact.
using IndexRange = std::pair<__int128, __int128>;

// The bounds of `a OP b` for +, -, *, and / or % by a positive constant
// (a non-negative dividend); nullopt for any other op.
std::optional<IndexRange> arithmetic_range(OpKind op, const IndexRange& a, const IndexRange& b);

}  // namespace stitch::codegen::common
