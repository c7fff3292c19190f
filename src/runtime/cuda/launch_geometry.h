// A kernel's launch geometry on the host (docs/cuda-backend.md, ABI): the
// Kernel IR's grid expression evaluated over the scalar arguments of one
// launch, checked against what a CUDA launch accepts.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "kir/kernel.h"

namespace stitch::runtime::cuda {

// The value of an i64/bool expression over `scalars` (by name): integer
// literals, scalar parameters and the integer ops the lowerings use for
// grids (add, sub, mul, div, rem, min, max, comparisons, select). Division
// rounds toward negative infinity, as the interpreter's does. Anything else,
// or a name with no value, is an InternalError.
int64_t evaluate_index_expr(const kir::Expr& e, const std::map<std::string, int64_t>& scalars);

// Blocks to launch for `kernel` with these scalars: 0 means skip the launch
// (an empty tensor). More than CUDA's 2^31 - 1 blocks in x is a UserError
// naming the kernel.
int64_t grid_blocks(const kir::Kernel& kernel, const std::map<std::string, int64_t>& scalars);

}  // namespace stitch::runtime::cuda
