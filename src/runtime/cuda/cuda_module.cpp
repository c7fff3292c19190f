#include "runtime/cuda/cuda_module.h"

#include <algorithm>

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

int CudaModule::registers(CUfunction f) const {
  const DriverApi& api = context_->api();
  int registers = 0;
  check(api, api.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, f), "cuFuncGetAttribute(NUM_REGS)");
  return registers;
}

void CudaModule::set_shared_carveout(CUfunction f, int percent) const {
  const DriverApi& api = context_->api();
  check(api, api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent),
        "cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT)");
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

int64_t kernel_shared_bytes(const kir::Kernel& k) {
  if (k.shared_arena_bytes > 0) return k.shared_arena_bytes;
  int64_t bytes = 0;
  for (const kir::SharedBuffer& sb : k.shared) {
    // f16 and bf16 are held as float in shared memory (codegen/common's compute type).
    const int64_t element = sb.dtype == DType::f16 || sb.dtype == DType::bf16 ? 4 : dtype_size(sb.dtype);
    bytes += sb.count * element;
  }
  return bytes;
}

}  // namespace stitch::runtime::cuda
