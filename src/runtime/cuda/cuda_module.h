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
  // Asks the driver for the shared-memory carveout that kernel `k` needs for
  // as many resident blocks as its threads and registers allow
  // (shared_carveout_percent); a kernel without shared memory keeps the
  // driver's default.
  void prefer_shared_carveout(CUfunction f, const kir::Kernel& k) const;
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

// The carveout (percent of the SM's shared capacity) under which blocks of
// `threads` threads, `registers` registers each and `shared_bytes` of shared
// memory are as many per SM as the threads and registers allow
// (docs/cuda-runtime.md, Shared-memory carveout); -1 (no preference) when the
// block uses no shared memory. Without it the H200's driver may stop short of
// what such kernels need (bench/results/gpu-2026-12-04-h200-notes.md).
int shared_carveout_percent(const schedule::GpuTarget& t, int64_t threads, int64_t registers, int64_t shared_bytes);

}  // namespace stitch::runtime::cuda
