// Lowering a checked user kernel to the Kernel IR (docs/kernel-language.md,
// Lowering), so it is emitted, compiled and cached like any fused group.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kir/kernel.h"
#include "kir/user_kernel.h"
#include "stitch/kernel.h"

namespace stitch::lower {

using kir::IndexSite;
using kir::LoweredUserKernel;
using kir::UserKernelShape;

// A shape for a call whose range has these extents (outermost first).
UserKernelShape user_kernel_shape(const std::vector<int64_t>& extents);

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
