#include "runtime/cuda/cuda_module.h"

#include <fmt/format.h>

#include "runtime/cpu/cpu_compiler.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {

CudaModule::CudaModule(std::shared_ptr<CudaContext> context, const std::string& cubin) : context_(std::move(context)) {
  context_->make_current();
  const DriverApi& api = context_->api();
  // A driver that refuses the image (a PTX JIT failure, a cubin for another
  // device) is a failed compile: the fallback ladder (pipeline.h) takes over.
  const CUresult result = api.cuModuleLoadData(&module_, cubin.data());
  if (result != CUDA_SUCCESS) {
    module_ = nullptr;
    throw cpu::CompileError(fmt::format("the driver refused the module: cuModuleLoadData: {}",
                                        describe_result(api, result)),
                            "");
  }
}

CudaModule::~CudaModule() {
  if (!module_) return;
  context_->make_current();
  context_->api().cuModuleUnload(module_);
}

void CudaModule::allow_dynamic_shared(CUfunction f, int64_t bytes) const {
  const DriverApi& api = context_->api();
  const int64_t optin = context_->device().shared_bytes_per_block_optin;
  if (bytes > optin) {
    throw InternalError(fmt::format("a kernel needs {} bytes of shared memory; {} allows {} per block", bytes,
                                    context_->device().name, optin),
                        __FILE__, __LINE__);
  }
  check(api, api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

CUfunction CudaModule::function(const std::string& name) const {
  CUfunction f = nullptr;
  check(context_->api(), context_->api().cuModuleGetFunction(&f, module_, name.c_str()),
        fmt::format("cuModuleGetFunction({})", name).c_str());
  return f;
}

int64_t dynamic_shared_bytes(const kir::Kernel& k) {
  return k.shared_arena_bytes > kir::kStaticSharedBytes ? k.shared_arena_bytes : 0;
}

}  // namespace stitch::runtime::cuda
