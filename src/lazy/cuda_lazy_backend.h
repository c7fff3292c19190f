// The CUDA back end of lazy arrays (docs/lazy.md, Back ends): kernels lowered
// to CUDA C, compiled with NVRTC through the cubin cache and launched on the
// context's stream; storages mirrored in device memory from the context's
// caching allocator; graphs through the CUDA executable, on host tensors.
#pragma once

#include <memory>
#include <string>

#include "lazy/lazy_backend.h"

namespace stitch::runtime::cuda {
class CudaContext;
}

namespace stitch::lazy {

// Device 0 of the process's shared context (CudaContext::shared); a UserError
// saying why where this build has no CUDA support or the machine no GPU.
std::unique_ptr<LazyBackend> make_cuda_backend(const std::string& cache_dir);
// The same on a given context (tests bring one on the fake driver). Needs a
// build with CUDA support (an InternalError otherwise).
std::unique_ptr<LazyBackend> make_cuda_backend(std::shared_ptr<runtime::cuda::CudaContext> context,
                                               const std::string& cache_dir);

}  // namespace stitch::lazy
