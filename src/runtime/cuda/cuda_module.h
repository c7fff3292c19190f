// A loaded cubin (docs/cuda-runtime.md): the executables' and the tuner's
// module, unloaded in its context when the last user lets it go.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kir/kernel.h"
#include "runtime/cuda/context.h"

namespace stitch::runtime::cuda {

class CudaModule {
 public:
  // Loads a cubin or NUL-terminated PTX text; cpu::CompileError when the
  // driver refuses it.
  CudaModule(std::shared_ptr<CudaContext> context, const std::string& cubin);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // A kernel may use more than 48 KiB of shared memory only once its limit
  // is raised; the driver refuses sizes over the device's opt-in maximum.
  void allow_dynamic_shared(CUfunction f, int64_t bytes) const;
  // Registers per thread of function `f`, as the driver reports them.
  int registers(CUfunction f) const;
  // Asks the driver for a carveout of `percent` of the SM's shared capacity
  // for `f` (pipeline/cuda/device_target.h decides it).
  void set_shared_carveout(CUfunction f, int percent) const;
  CUfunction function(const std::string& name) const;

 private:
  std::shared_ptr<CudaContext> context_;
  CUmodule module_ = nullptr;
};

// The CUDA emitter declares an arena over kir::kStaticSharedBytes as dynamic
// shared memory (docs/cuda-backend.md): its size is a launch argument.
int64_t dynamic_shared_bytes(const kir::Kernel& k);

// The shared memory one block of `k` holds: its arena, or its static buffers.
int64_t kernel_shared_bytes(const kir::Kernel& k);

}  // namespace stitch::runtime::cuda
