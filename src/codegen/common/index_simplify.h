// Index simplification before emission (docs/lowering.md, Index simplification),
// shared by both emitters: a kernel's i64 index arithmetic rewritten where an
// equal expression costs less. Layout ops delinearise a linear index into
// digits, `i_k = (lin / S_k) % d_k`, and linearise them again in another
// shape; a reshape of contiguous data gives back `lin`, which C compilers do
// not see through (64-bit divisions per element, a gather, no vector loop).
//
// The rewrite puts each expression into a canonical sum of terms over atoms
// (loop variables, parameters, opaque expressions, and digits of a sum), with
// these identities for a non-negative x and positive literals:
//   (x / a) / b = x / (a*b)          (x % (a*b)) % b = x % b
//   (x % (a*b)) / b = (x / b) % a    (x / b) % a * b + x % b = x % (a*b)
//   (x / b) * b + x % b = x          (q*d + r) / d = q + r / d,  (q*d + r) % d = r % d
// and value ranges from loop extents (a digit known to be 0 is 0, x % d with
// 0 <= x < d is x). Sums equal to an index let in scope are written as the
// let's name. An expression is replaced only when the result is cheaper
// (divisions and remainders count most), so a kernel never gets worse.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kir/kernel.h"

namespace stitch::codegen::common {

// `kernel` with its index expressions simplified: let initialisers of i64,
// load and store indices, loop extents, and the i64 parts of every other
// expression. Values are unchanged for every input that does not overflow i64.
kir::Kernel simplify_indices(kir::Kernel kernel);
std::vector<kir::Kernel> simplify_indices(std::vector<kir::Kernel> kernels);

// One expression on its own, no lets in scope, over loop variables of the
// given extents (any other variable is a scalar parameter: one value of
// unknown sign): for tests.
kir::Expr simplify_index_expr(const kir::Expr& e, const std::map<std::string, int64_t>& loop_extents = {});

}  // namespace stitch::codegen::common
