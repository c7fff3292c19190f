// One user-kernel call on the device (docs/kernel-language.md, Lowering
// (CUDA)): the eager path, for tests and `stitch run --kernel --backend cuda`.
// Lazy arrays do not live on the device yet.
#pragma once

#include <memory>
#include <vector>

#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::runtime::cuda {

// Uploads the arrays (arguments that are the same region share one device
// buffer; arguments that overlap otherwise are a UserError), compiles the
// CUDA form through `cubins`, launches it, downloads every array the kernel
// writes back into its host memory, and combines a reduction's per-block
// partial values on the host. Returns the reduction's value (0-d) or an empty
// tensor. Checks the call as the interpreter does (bind_kernel).
Tensor run_user_kernel_cuda(const std::shared_ptr<CudaContext>& context, CubinCache& cubins, const UserKernel& kernel,
                            const std::vector<KernelArg>& args);

}  // namespace stitch::runtime::cuda
