// Lowering a checked user kernel to the Kernel IR (docs/kernel-language.md,
// Lowering), so it is emitted, compiled and cached like any fused group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kir/kernel.h"
#include "stitch/kernel.h"

namespace stitch::lower {

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

// A shape for a call whose range has these extents (outermost first).
UserKernelShape user_kernel_shape(const std::vector<int64_t>& extents);

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
  kir::Kernel kernel;
  DType accumulator_dtype = DType::f32;  // reductions: what `partials` holds
  std::vector<IndexSite> index_sites;    // checked kernels: site s, axis d at index_errors[2 * (s * axes + d)]
  int axes = 0;                          // the largest array rank
};

// The CPU form: grid blocks over rows of the outer dimensions and chunks of
// the innermost, each chunk a vector loop; a reduction keeps one accumulator
// per lane and writes the block's combined value to partials[block].
LoweredUserKernel lower_user_kernel_cpu(const UserKernel& kernel, const UserKernelShape& shape,
                                        const std::string& kir_name);

// The CUDA form: one thread per index of the flattened range (row-major), in
// blocks of 256 threads; `lanes` and `rows_per_block` are unused. A reduction
// keeps one accumulator per thread and writes each block's combined value to
// partials[block] (one per block of the launch), which the caller combines.
// Compile-checked with NVRTC; not yet run on a GPU (docs/kernel-language.md).
LoweredUserKernel lower_user_kernel_cuda(const UserKernel& kernel, const UserKernelShape& shape,
                                         const std::string& kir_name);

// Names of the generated code for a user name: user names are prefixed so
// they never meet the lowering's own (blk, lane, row, acc).
std::string user_buffer_name(const std::string& name);

}  // namespace stitch::lower
