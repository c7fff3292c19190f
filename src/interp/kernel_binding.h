// Binding a user-kernel call's arguments (docs/kernel-language.md, Calls):
// shared by the reference interpreter and the compiled back ends, so both
// accept and reject exactly the same calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::interp {

// A scalar held wide: floats as double (already rounded to the dtype),
// integers and bools as int64.
struct WideScalar {
  DType dtype = DType::i64;
  double f = 0.0;
  int64_t i = 0;
};

struct KernelBinding {
  SymbolBindings symbols;
  std::vector<WideScalar> scalars;  // one per parameter; an array's entry is unused
  std::vector<int64_t> extents;     // one per range dimension, >= 0
  int64_t index_count = 0;          // the product of the extents
};

// Checks every argument against its parameter (kind, dtype, rank, extents,
// symbols bound consistently; a scalar must be exactly representable in the
// parameter's dtype, floats rounded to it) and evaluates the range. Throws
// UserError naming the kernel and the parameter.
KernelBinding bind_kernel(const UserKernel& kernel, const std::vector<KernelArg>& args);

}  // namespace stitch::interp
