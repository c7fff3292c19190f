#include "pipeline/cuda/user_kernel_cuda_route.h"

#include <memory>
#include <string>

#include "codegen/cuda/cuda_emitter.h"
#include "interp/index_bounds.h"
#include "pipeline/cuda/device_target.h"
#include "interp/kernel_binding.h"
#include "runtime/cpu/user_kernel_call.h"
#include "runtime/cuda/cuda_module.h"

namespace stitch::pipeline {

using runtime::cuda::CubinCache;
using runtime::cuda::CudaContext;
using runtime::cuda::CudaModule;
using runtime::cuda::CudaUserKernel;

std::shared_ptr<const CudaUserKernel> compile_user_kernel_cuda(const std::shared_ptr<CudaContext>& context,
                                                               CubinCache& cubins, const UserKernel& kernel,
                                                               const kir::UserKernelShape& shape) {
  kir::LoweredUserKernel lowered = lower::lower_user_kernel_cuda(kernel, shape, "uk_" + kernel.name);
  const std::string source = codegen::cuda::emit_cuda_translation_unit({lowered.kernel});
  context->make_current();
  auto module = std::make_unique<CudaModule>(
      context, cubins.load_or_compile(source, context->device().arch(), runtime::cuda::module_image_for(context->api())));
  prefer_shared_carveout(*module, device_target(*context), module->function(lowered.kernel.name), lowered.kernel);
  return std::make_shared<const CudaUserKernel>(context, std::move(lowered), shape.check_indices, std::move(module));
}

Tensor run_user_kernel_cuda(const std::shared_ptr<CudaContext>& context, CubinCache& cubins, const UserKernel& kernel,
                            const std::vector<KernelArg>& args) {
  interp::KernelBinding b = interp::bind_kernel(kernel, args);
  kir::UserKernelShape shape;
  shape.restrict_array = runtime::cpu::restrict_flags(kernel, args);
  shape.check_indices = !interp::indices_proven_in_range(kernel, b, args);
  return runtime::cuda::run_on_host_arrays(*compile_user_kernel_cuda(context, cubins, kernel, shape), context, kernel, args);
}

}  // namespace stitch::pipeline
