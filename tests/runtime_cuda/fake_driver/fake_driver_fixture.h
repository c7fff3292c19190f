// A test on the fake CUDA driver (fake_cuda_driver.h): the driver API loaded
// from the fake by path, its inspection functions, and a fresh fake state
// before and after every test.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fake_cuda_driver.h"
#include "runtime/cuda/driver.h"

namespace stitch::runtime::cuda {

class FakeDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    api_ = load_driver(&why, STITCH_FAKE_CUDA_DRIVER);
    ASSERT_NE(api_, nullptr) << why;
    ASSERT_TRUE(fake_.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
    fake_.stitch_fake_cuda_reset();
  }
  void TearDown() override {
    if (fake_.stitch_fake_cuda_reset) fake_.stitch_fake_cuda_reset();
  }

  const DriverApi* api_ = nullptr;
  fake_cuda::Inspection fake_;
};

}  // namespace stitch::runtime::cuda
