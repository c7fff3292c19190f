// The user kernels' route through the compile layer on a GPU
// (docs/kernel-language.md, Lowering (CUDA)): a kernel lowered for one
// shape, emitted as CUDA C, compiled through the cubin cache and loaded;
// runtime/cuda/user_kernel_cuda.h launches it.
#pragma once

#include <memory>
#include <vector>

#include "lower/lower_user_kernel.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "runtime/cuda/user_kernel_cuda.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::pipeline {

// `kernel` lowered for `shape` (only restrict_array and check_indices matter
// on CUDA), compiled through `cubins` and loaded on `context`.
std::shared_ptr<const runtime::cuda::CudaUserKernel> compile_user_kernel_cuda(
    const std::shared_ptr<runtime::cuda::CudaContext>& context, runtime::cuda::CubinCache& cubins,
    const UserKernel& kernel, const kir::UserKernelShape& shape);

// The eager path of one call on host arrays: checks the call as the
// interpreter does (bind_kernel), shapes it (indices checked at run time
// unless proven in range), compiles it and runs it
// (runtime::cuda::run_on_host_arrays).
Tensor run_user_kernel_cuda(const std::shared_ptr<runtime::cuda::CudaContext>& context, runtime::cuda::CubinCache& cubins,
                            const UserKernel& kernel, const std::vector<KernelArg>& args);

}  // namespace stitch::pipeline
