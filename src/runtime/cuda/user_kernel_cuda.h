// User-kernel calls on the device (docs/kernel-language.md, Lowering (CUDA)):
// a kernel lowered and loaded once per shape by the compile layer
// (pipeline/cuda/user_kernel_cuda_route.h), which lazy arrays on Backend::Cuda
// launch on device memory they keep (docs/lazy.md, Back ends); and a call on
// host arrays, for tests and `stitch run --kernel --backend cuda`.
#pragma once

#include <memory>
#include <vector>

#include "kir/user_kernel.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"

namespace stitch::runtime::cuda {

class CudaModule;

// One kernel lowered for one shape (UserKernelShape: only restrict_array and
// check_indices matter on CUDA), compiled through the cubin cache and loaded.
class CudaUserKernel {
 public:
  // `lowered`, loaded as `module` on `context` (pipeline::compile_user_kernel_cuda makes it).
  CudaUserKernel(std::shared_ptr<CudaContext> context, kir::LoweredUserKernel lowered, bool check_indices,
                 std::unique_ptr<CudaModule> module);
  ~CudaUserKernel();

  // Launches a call on the context's stream. Every array argument's `data`
  // is a device address (of the context's memory), its dtype and shape those
  // of the array; the call is bound as the interpreter binds it. A
  // parallel_for returns an empty tensor without waiting for the kernel; a
  // reduction waits and returns its value (0-d), its per-block partial values
  // combined on the host. A checked kernel waits and throws the UserError of
  // an index out of range (the arrays then hold what the kernel wrote).
  Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const;

  const kir::LoweredUserKernel& lowered() const { return lowered_; }

 private:
  std::shared_ptr<CudaContext> context_;
  kir::LoweredUserKernel lowered_;
  bool check_indices_ = false;
  std::unique_ptr<CudaModule> module_;
  CUfunction function_ = nullptr;
};

// A call on host arrays: uploads the arrays (arguments that are the same
// region share one device buffer; arguments that overlap otherwise are a
// UserError), launches `compiled`, downloads every array the kernel writes
// back into its host memory, and combines a reduction's per-block partial
// values on the host. Returns the reduction's value (0-d) or an empty tensor.
Tensor run_on_host_arrays(const CudaUserKernel& compiled, const std::shared_ptr<CudaContext>& context,
                          const UserKernel& kernel, const std::vector<KernelArg>& args);

}  // namespace stitch::runtime::cuda
