// Whether a user-kernel call's array indices stay in range, proven before it
// runs (docs/kernel-language.md, Index checks). Compiled kernels do not check
// an index they were proven not to need checking; a call whose indices this
// cannot prove runs a variant that checks every access and reports the first
// one out of range as the interpreter would, instead of touching memory
// outside the array.
//
// The proof is interval arithmetic over the call's values: range indices in
// [0, extent), scalars and shape symbols as bound, serial loop variables in
// [0, their extent's upper bound), locals as the join of every value assigned
// to them; +, -, *, min, max, and, rem, div by a positive divisor, select and
// integer casts are followed, anything else (a loaded value, a float) is
// unknown. Inside an `if`, a condition `v < e` (<=, >, >=, and conjunctions)
// narrows the name v for its body, so guards like a fused kernel's `i0 < n`
// or `if i > 0 { x[i - 1] }` keep their accesses proven; else branches and
// other conditions narrow nothing. Of the relations between values only one
// is kept: in `for t < a - b` (b fixed for the call), t + b < a, so
// `for t < m - i { x[i + t] }` is proven; others are lost (then the call is
// checked, not refused).
#pragma once

#include <vector>

#include "interp/kernel_binding.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::interp {

// True when every load and store of `kernel`, called with `args` (bound as
// `binding`), provably indexes inside its array, or the range is empty.
bool indices_proven_in_range(const UserKernel& kernel, const KernelBinding& binding,
                             const std::vector<KernelArg>& args);

// Whether some index of `kernel` depends on a scalar parameter's value (so a
// proof for one call does not carry to another with the same shapes).
bool indices_read_scalars(const UserKernel& kernel);

}  // namespace stitch::interp
