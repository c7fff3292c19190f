// CUDA packages (docs/packages.md, GPU targets): for each listed architecture
// the cubin of the translation unit the CUDA route generates for it, with its
// PTX beside it, built by NVRTC without a GPU; loaded onto the device whose
// architecture a target matches (its cubin), or a newer one (its PTX, which
// the driver compiles), or cuda-sim (its PTX).
#pragma once

#include <memory>
#include <string>

#include "package/package_build.h"
#include "package/package_file.h"
#include "runtime/cuda/cubin_cache.h"
#include "runtime/cuda/cuda_executable.h"

namespace stitch::package {

// UserError for an arch that is not sm_XX, or a graph the CUDA back end cannot run.
Package build_cuda_package(const Graph& graph, const PackageRequest& request, runtime::cuda::CubinCache& cache);

// The package on `context`'s device. UserError when the package is not a CUDA
// one, no target suits the device (naming both), a STITCH_* switch contradicts
// the package, or this Stitch generates code the package does not hold.
runtime::cuda::CudaExecutable load_cuda_package(const Package& p, const std::string& path,
                                                std::shared_ptr<runtime::cuda::CudaContext> context);

}  // namespace stitch::package
