// The user kernels' route through the compile layer on the CPU
// (docs/kernel-language.md, Running): a kernel lowered for one call's shape
// and aliasing (lower/lower_user_kernel.h), emitted as C++ and compiled
// through the kernel cache; runtime/cpu/user_kernel_call.h runs it.
#pragma once

#include <memory>
#include <vector>

#include "lower/lower_user_kernel.h"
#include "runtime/cpu/kernel_cache.h"
#include "runtime/cpu/user_kernel_call.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::pipeline {

// `kernel` lowered for `shape` and compiled through `cache`; an equal kernel
// and shape compiled before in this process is reused without touching the
// disk.
std::shared_ptr<const runtime::cpu::CompiledUserKernel> compile_user_kernel_cpu(const UserKernel& kernel,
                                                                                const kir::UserKernelShape& shape,
                                                                                runtime::cpu::KernelCache& cache);
// Several in one translation unit (one compiler run), for test suites.
std::vector<std::shared_ptr<const runtime::cpu::CompiledUserKernel>> compile_user_kernels_cpu(
    const std::vector<UserKernel>& kernels, const std::vector<kir::UserKernelShape>& shapes,
    runtime::cpu::KernelCache& cache);

// Bind, shape (indices checked at run time unless proven in range), compile
// and run in one: the eager path of one call.
Tensor run_user_kernel_cpu(const UserKernel& kernel, const std::vector<KernelArg>& args, runtime::cpu::KernelCache& cache);

}  // namespace stitch::pipeline
