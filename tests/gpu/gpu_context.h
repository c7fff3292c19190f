// The GPU the tests of this folder run on (label gpu; docs/testing.md): one
// CUDA context per test binary, opened on first use, so that a binary that
// runs many tests pays for the primary context once. Without a GPU or a
// driver every test skips with the reason, which is what CI sees.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/cuda/context.h"

namespace stitch::gpu_testing {

// The context of device 0, or nullptr with `why` (no driver, no device).
// Opened once per process; released when the test program ends.
std::shared_ptr<runtime::cuda::CudaContext> gpu_context(std::string* why);

// A test that needs the GPU: SetUp skips it with "no GPU: <reason>" when there
// is none, else context() is the shared context.
template <class Base>
class WithGpu : public Base {
 protected:
  void SetUp() override {
    std::string why;
    context_ = gpu_context(&why);
    if (!context_) GTEST_SKIP() << "no GPU: " << why;
  }
  const std::shared_ptr<runtime::cuda::CudaContext>& context() const { return context_; }

 private:
  std::shared_ptr<runtime::cuda::CudaContext> context_;
};

using GpuTest = WithGpu<::testing::Test>;
template <class Param>
using GpuTestWithParam = WithGpu<::testing::TestWithParam<Param>>;

}  // namespace stitch::gpu_testing
