// Running user-kernel calls on the CPU (docs/kernel-language.md, Running): a
// kernel lowered for one call's shape and aliasing and compiled by the
// compile layer (pipeline/user_kernel_route.h) runs on the bound arguments,
// and a reduction's per-block partial values are combined.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kir/user_kernel.h"
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
  // `lowered` for `shape`, its translation unit `source` loaded as `module`
  // (pipeline::compile_user_kernel_cpu makes it).
  CompiledUserKernel(kir::LoweredUserKernel lowered, kir::UserKernelShape shape, std::string source,
                     std::shared_ptr<CpuModule> module);

  // Runs the call; the arguments must have been bound (bind_kernel) against
  // this kernel. Returns the reduction's value (0-d) or an empty tensor.
  Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const;

  const kir::Kernel& kir() const { return lowered_.kernel; }
  const std::string& source() const { return source_; }

 private:
  kir::LoweredUserKernel lowered_;
  kir::UserKernelShape shape_;
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
int64_t index_error_slots(const kir::LoweredUserKernel& lowered);
void report_index_errors(const UserKernel& kernel, const kir::LoweredUserKernel& lowered, const Tensor& errors,
                         const std::vector<KernelArg>& args);

}  // namespace stitch::runtime::cpu
