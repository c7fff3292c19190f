// Loading the CUDA driver with dlopen (docs/cuda-runtime.md, Loading the
// driver): a missing driver is a reason, not a crash; with a GPU, the device's
// properties become the latency evaluator's target.
#include <gtest/gtest.h>

#include "pipeline/cuda/device_target.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {
namespace {

TEST(CudaDriver, AMissingLibraryIsAReasonNotACrash) {
  std::string why;
  EXPECT_EQ(load_driver(&why, "libstitch-test-no-such-driver.so.1"), nullptr);
  EXPECT_NE(why.find("could not be loaded"), std::string::npos) << why;
  // The failure is remembered: a second call answers the same without retrying.
  std::string again;
  EXPECT_EQ(load_driver(&again, "libstitch-test-no-such-driver.so.1"), nullptr);
  EXPECT_EQ(again, why);
}

TEST(CudaDriver, ALibraryWithoutTheDriverEntryPointsIsRefused) {
  // libc has none of the cu* symbols: every one is reported missing.
  std::string why;
  EXPECT_EQ(load_driver(&why, "libc.so.6"), nullptr);
  EXPECT_NE(why.find("lacks cuInit"), std::string::npos) << why;
  EXPECT_NE(why.find("cuMemAlloc_v2"), std::string::npos) << why;
}

// Label gpu: runs where a driver and a device are present.
TEST(CudaDevice, PropertiesBecomeTheTarget) {
  std::string why;
  const DriverApi* api = load_driver(&why);
  if (!api) GTEST_SKIP() << "no GPU: " << why;
  DeviceProperties d = query_device(*api);
  EXPECT_GE(d.major, 7);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_EQ(d.warp_size, 32);
  EXPECT_GE(d.shared_bytes_per_block_optin, d.shared_bytes_per_block);
  schedule::GpuTarget t = pipeline::target_for_device(d);
  EXPECT_EQ(t.arch, d.arch());
  EXPECT_EQ(t.sm_count, d.sm_count);
  EXPECT_GT(t.memory_bytes_per_second, 1e11);
  std::cout << d.summary() << "\n";
}

}  // namespace
}  // namespace stitch::runtime::cuda
