// The CUDA context on the simulated driver (docs/cuda-sim.md) for the suites
// that run the CUDA back end on it: opened once per test binary; a failure to
// open is a test failure. Needs STITCH_CUDA_SIM_DRIVER (its path).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/cuda/context.h"

namespace stitch::gpu_testing {

inline std::shared_ptr<runtime::cuda::CudaContext> sim_context() {
  static const std::shared_ptr<runtime::cuda::CudaContext> context = [] {
    std::string why;
    std::shared_ptr<runtime::cuda::CudaContext> c = runtime::cuda::CudaContext::open(&why, 0, STITCH_CUDA_SIM_DRIVER);
    if (!c) ADD_FAILURE() << "the simulated driver did not open: " << why;
    return c;
  }();
  return context;
}

}  // namespace stitch::gpu_testing
