// The simulated driver's own behaviour (docs/cuda-sim.md): device memory at
// raw addresses with bounds-checked copies, PTX modules, launches through
// kernelParams, the dynamic shared-memory limit, and a kernel's fault
// reported as CUDA_ERROR_ILLEGAL_ADDRESS with the interpreter's diagnosis.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/context.h"
#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {
namespace {

const DriverApi& sim_api() {
  std::string why;
  const DriverApi* api = load_driver(&why, STITCH_CUDA_SIM_DRIVER);
  if (!api) throw std::runtime_error("the simulated driver did not load: " + why);
  return *api;
}

// out[i] = in[i] + 1 for i < n: no bounds check of its own.
const char* kAddOne = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry add_one(.param .u64 out, .param .u64 in, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mul.wide.u32 %rd3, %r2, 4;
  add.u64 %rd4, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  add.u32 %r3, %r3, 1;
  add.u64 %rd5, %rd1, %rd3;
  st.global.u32 [%rd5], %r3;
DONE:
  ret;
}
)";

class SimDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    CUcontext context = nullptr;
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&context, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuModuleLoadData(&module, kAddOne), CUDA_SUCCESS);
    ASSERT_EQ(api.cuModuleGetFunction(&function, module, "add_one"), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemAlloc(&in, 40), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemAlloc(&out, 40), CUDA_SUCCESS);
  }
  void TearDown() override {
    api.cuMemFree(in);
    api.cuMemFree(out);
    api.cuModuleUnload(module);
    api.cuDevicePrimaryCtxRelease(0);
  }
  CUresult launch(uint32_t n, unsigned shared = 0) {
    void* params[] = {&out, &in, &n};
    return api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, shared, nullptr, params, nullptr);
  }

  const DriverApi& api = sim_api();
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  CUdeviceptr in = 0, out = 0;
};

TEST_F(SimDriver, CopiesLaunchesAndCopiesBack) {
  EXPECT_TRUE(api.loads_ptx);
  std::vector<uint32_t> host(10);
  for (uint32_t i = 0; i < 10; ++i) host[i] = 10 * i;
  ASSERT_EQ(api.cuMemcpyHtoDAsync(in, host.data(), 40, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(out, 0xff, 40, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(launch(9), CUDA_SUCCESS);
  std::vector<uint32_t> got(10);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(got.data(), out, 40, nullptr), CUDA_SUCCESS);
  for (uint32_t i = 0; i < 9; ++i) EXPECT_EQ(got[i], 10 * i + 1) << i;
  EXPECT_EQ(got[9], 0xffffffffu);
  // A copy past an allocation's end is refused, not performed.
  EXPECT_EQ(api.cuMemcpyHtoDAsync(in + 4, host.data(), 40, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(SimDriver, NewMemoryIsNotZeros) {
  // As on a GPU, nothing initialises it: a kernel reading what nothing wrote
  // sees NaNs and -1s, not plausible zeros.
  std::vector<uint32_t> got(10, 0);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(got.data(), in, 40, nullptr), CUDA_SUCCESS);
  for (uint32_t v : got) EXPECT_EQ(v, 0xffffffffu);
}

TEST_F(SimDriver, AFaultIsAnIllegalAddressWithTheInterpretersDiagnosis) {
  const CUresult r = launch(11);  // one element past both buffers
  EXPECT_EQ(r, CUDA_ERROR_ILLEGAL_ADDRESS);
  const std::string text = describe_result(api, r);
  EXPECT_NE(text.find("add_one"), std::string::npos) << text;
  EXPECT_NE(text.find("ld.global"), std::string::npos) << text;
}

TEST_F(SimDriver, DynamicSharedMemoryNeedsTheOptIn) {
  EXPECT_EQ(launch(1, 64 * 1024), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
            CUDA_SUCCESS);
  EXPECT_EQ(launch(1, 64 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 228 * 1024),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(SimDriver, UnknownKernelsAndBadPtxAreNamed) {
  CUfunction missing = nullptr;
  EXPECT_EQ(api.cuModuleGetFunction(&missing, module, "nope"), CUDA_ERROR_NOT_FOUND);
  CUmodule bad = nullptr;
  const CUresult r = api.cuModuleLoadData(&bad, ".version 8.0\n.target sm_90\nnot ptx at all");
  EXPECT_EQ(r, CUDA_ERROR_INVALID_PTX);
  EXPECT_NE(describe_result(api, r).find("module.ptx"), std::string::npos) << describe_result(api, r);
}

}  // namespace
}  // namespace stitch::runtime::cuda
