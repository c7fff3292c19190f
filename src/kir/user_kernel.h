// A user kernel lowered to the Kernel IR, with what its caller needs to call
// it (docs/kernel-language.md, Lowering): the shape it was specialised to and
// its calling convention. lower/lower_user_kernel.h makes it; the runtime's
// user-kernel calls (runtime/cpu/user_kernel_call.h, runtime/cuda/user_kernel_cuda.h)
// run it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kir/kernel.h"
#include "stitch/kernel.h"

namespace stitch::kir {

struct UserKernelShape {
  // Lanes of the innermost range dimension one vector loop covers, and rows
  // of the outer dimensions one grid block runs: chosen from the extents of
  // the call (user_kernel_shape), so a kernel is specialised to a bucket of
  // sizes, not to the sizes themselves.
  int64_t lanes = 1024;
  int64_t rows_per_block = 1;
  // One flag per parameter (arrays only): the argument shares no storage
  // with another array argument the kernel writes, so its pointer is
  // __restrict__.
  std::vector<bool> restrict_array;
  // Check every array index at run time (docs/kernel-language.md, Index
  // checks): an access out of range is skipped (a load gives 0) and noted
  // in `index_errors`, which the caller reports.
  bool check_indices = false;
};

// An array access of the kernel's text, which a checked kernel numbers.
struct IndexSite {
  std::string array;
  bool write = false;
  SourceLoc loc;
};

// The calling convention: buffers are the array parameters in order, then,
// for a reduction, `partials` (one value per grid block, in the accumulator
// dtype, combined by the caller), then, when indices are checked,
// `index_errors` (i64, 2 per site and axis, zeroed by the caller: a flag and
// the index that was out of range); scalars are the scalar parameters in
// order, then the shape symbols in UserKernel::symbols() order (i64).
struct LoweredUserKernel {
  Kernel kernel;
  DType accumulator_dtype = DType::f32;  // reductions: what `partials` holds
  std::vector<IndexSite> index_sites;    // checked kernels: site s, axis d at index_errors[2 * (s * axes + d)]
  int axes = 0;                          // the largest array rank
};

}  // namespace stitch::kir
