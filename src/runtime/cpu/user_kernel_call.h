// Running user-kernel calls on the CPU (docs/kernel-language.md, Running):
// bind the arguments as the interpreter does, lower the kernel for the call's
// shape and aliasing, compile through the kernel cache, run, and combine a
// reduction's per-block partial values.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lower/lower_user_kernel.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::runtime::cpu {

// Which array arguments may be __restrict__: an array overlapping another
// array argument, where either of the two is written, may not.
std::vector<bool> restrict_flags(const UserKernel& kernel, const std::vector<KernelArg>& args);

// One kernel lowered for one shape, compiled and loaded.
class CompiledUserKernel {
 public:
  // Lowers and compiles through `cache`; an equal kernel and shape compiled
  // before in this process is reused without touching the disk.
  static std::shared_ptr<const CompiledUserKernel> compile(const UserKernel& kernel,
                                                           const lower::UserKernelShape& shape, KernelCache& cache);
  // Several in one translation unit (one compiler run), for test suites.
  static std::vector<std::shared_ptr<const CompiledUserKernel>> compile_batch(
      const std::vector<UserKernel>& kernels, const std::vector<lower::UserKernelShape>& shapes, KernelCache& cache);

  // Runs the call; the arguments must have been bound (bind_kernel) against
  // this kernel. Returns the reduction's value (0-d) or an empty tensor.
  Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const;

  const kir::Kernel& kir() const { return lowered_.kernel; }
  const std::string& source() const { return source_; }

 private:
  lower::LoweredUserKernel lowered_;
  lower::UserKernelShape shape_;
  std::string source_;
  std::shared_ptr<CpuModule> module_;
};

// A reduction's value from the per-block partial values a lowered kernel
// wrote (in its accumulator dtype): combined in double (floats) or wrapping
// int64, rounded once; the identity for no blocks. Shared by the CPU and the
// CUDA calls.
Tensor combine_partials(const UserKernel& kernel, const Tensor& partials);

// Checked kernels (UserKernelShape::check_indices): the length of the
// index_errors buffer the caller zeroes and passes last, and the UserError
// for the first access it notes out of range (none: returns).
int64_t index_error_slots(const lower::LoweredUserKernel& lowered);
void report_index_errors(const UserKernel& kernel, const lower::LoweredUserKernel& lowered, const Tensor& errors,
                         const std::vector<KernelArg>& args);

// bind, shape (indices checked at run time unless proven in range), compile
// and run in one: the eager path of one call.
Tensor run_user_kernel(const UserKernel& kernel, const std::vector<KernelArg>& args, KernelCache& cache);

}  // namespace stitch::runtime::cpu
